package window

import (
	"context"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/app/exitline"
	"github.com/skiffvpn/skiff/core/api"
)

// exitLine is Home's "Exit 203.0.113.7 · 🇩🇪 DE" line: where traffic
// leaves from, as the core finds it (Backend.Exit). It asks once per run
// and route member; the core keeps the answer and bounds the checks.
type exitLine struct {
	label *widget.Label
	line  *exitline.Line
}

func newExitLine(u *UI) *exitLine {
	e := &exitLine{label: widget.NewLabel("")}
	e.label.Truncation = fyne.TextTruncateEllipsis
	e.label.Hide()
	e.line = newExitFollower(u, func(s string) {
		if s == "" {
			e.label.Hide()
			return
		}
		setText(e.label, s)
		e.label.Show()
	})
	return e
}

// update asks for the exit of st's run and server (exitline.Key, as the
// trays do); connected false hides the line.
func (e *exitLine) update(st api.Status, connected bool) {
	key := ""
	if connected {
		key = exitline.Key(st)
	}
	e.line.Follow(key)
}

// newExitFollower is an exit line (package exitline) in the window's
// words that asks u's backend on u's goroutines and shows on the UI thread.
func newExitFollower(u *UI, show func(string)) *exitline.Line {
	return exitline.New(exitline.Options{
		Exit: func(ctx context.Context, refresh bool) (*api.Exit, error) { return u.b.Exit(ctx, refresh) },
		Words: func(key string, data map[string]any) string {
			if data == nil {
				return tr(key)
			}
			return tr(key, M(data))
		},
		Background: u.background,
		Show:       show,
	})
}
