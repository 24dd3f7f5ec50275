package window

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
)

// maxLogLines bounds the lines the Logs view keeps.
const maxLogLines = 2000

// logLevels are the levels the filter offers, in the order shown.
var logLevels = []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}

func logLevelLabels() []string {
	return []string{tr("logs.debug"), tr("logs.info"), tr("logs.warn"), tr("logs.error")}
}

// logsView shows the core's log live.
type logsView struct {
	u       *UI
	obj     fyne.CanvasObject
	list    *widget.List
	level   *widget.Select
	follow  *widget.Check
	copyBtn *widget.Button
	empty   *widget.Label // the list's empty state

	all   []core.LogRecord
	shown []core.LogRecord
	min   slog.Level
}

func newLogsView(u *UI) *logsView {
	v := &logsView{u: u, min: slog.LevelInfo}
	v.list = labelList(
		func() int { return len(v.shown) }, "",
		func(i widget.ListItemID, l *widget.Label) {
			r := v.shown[i]
			l.SetText(logLine(r))
			switch {
			case r.Level >= slog.LevelError:
				l.Importance = widget.DangerImportance
			case r.Level >= slog.LevelWarn:
				l.Importance = widget.WarningImportance
			default:
				l.Importance = widget.MediumImportance
			}
			l.Refresh()
		},
	)
	v.level = widget.NewSelect(logLevelLabels(), func(string) {
		v.min = logLevels[max(v.level.SelectedIndex(), 0)]
		v.filter()
	})
	v.level.SetSelectedIndex(1)
	v.follow = widget.NewCheck(tr("logs.follow"), nil)
	v.follow.SetChecked(true)
	v.copyBtn = widget.NewButtonWithIcon(tr("logs.copy"), theme.ContentCopyIcon(), func() {
		v.u.fa.Clipboard().SetContent(v.Text())
	})
	clear := widget.NewButtonWithIcon(tr("logs.clear"), theme.ContentClearIcon(), func() {
		v.all = nil
		v.filter()
	})
	// A line is cut at the window's edge; selecting it opens it whole.
	v.list.OnSelected = func(i widget.ListItemID) {
		if i < len(v.shown) {
			showDetails(v.u.win, tr("logs.lineTitle"), logLine(v.shown[i]))
		}
		v.list.UnselectAll()
	}
	v.empty = widget.NewLabel(tr("logs.empty"))
	v.empty.Alignment = fyne.TextAlignCenter
	bar := container.NewHBox(widget.NewLabel(tr("logs.level")), v.level, v.follow, v.copyBtn, clear)
	v.obj = container.NewPadded(container.NewBorder(bar, nil, nil, nil, container.NewStack(v.list, container.NewVBox(v.empty))))
	ctx, cancel := context.WithTimeout(u.ctx, 5*time.Second)
	recs, _ := u.b.Logs(ctx)
	cancel()
	v.add(recs)
	return v
}

func logLine(r core.LogRecord) string {
	s := r.Time.Local().Format("15:04:05") + " " + r.Level.String() + " " + r.Message
	if r.Attrs != "" {
		s += " " + r.Attrs
	}
	return s
}

// add appends records; it runs on the UI thread.
func (v *logsView) add(recs []core.LogRecord) {
	if len(recs) == 0 {
		return
	}
	v.all = append(v.all, recs...)
	if over := len(v.all) - maxLogLines; over > 0 {
		v.all = append(v.all[:0], v.all[over:]...)
	}
	v.filter()
}

func (v *logsView) filter() {
	v.shown = v.shown[:0]
	for _, r := range v.all {
		if r.Level >= v.min {
			v.shown = append(v.shown, r)
		}
	}
	if v.empty != nil && (len(v.shown) == 0) != v.empty.Visible() {
		v.empty.Hidden = len(v.shown) > 0
		v.empty.Refresh()
	}
	v.list.Refresh()
	if v.follow != nil && v.follow.Checked && len(v.shown) > 0 {
		v.list.ScrollToBottom()
	}
}

// Text returns the shown lines, as Copy puts them on the clipboard.
func (v *logsView) Text() string {
	var b strings.Builder
	for _, r := range v.shown {
		b.WriteString(logLine(r))
		b.WriteByte('\n')
	}
	return b.String()
}
