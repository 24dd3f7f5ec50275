package window

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/profile"
)

// overlayTexts returns the texts of the window's overlays (dialogs).
func overlayTexts(w fyne.Window) string {
	var b strings.Builder
	for _, o := range w.Canvas().Overlays().List() {
		for s := range texts(shownObjects(o)) {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestHomeWithoutServersSaysWhatToDo(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	home := h.ui.home
	if !home.empty.Visible() {
		t.Fatal("Home with no server shows no hint")
	}
	var action *widget.Button
	for _, o := range shownObjects(home.empty) {
		if b, ok := o.(*widget.Button); ok {
			action = b
		}
	}
	if action == nil || action.Text != "Add a subscription" {
		t.Fatalf("the hint has no button to Profiles: %v", action)
	}
	test.Tap(action)
	if h.ui.tabs.SelectedIndex() != 1 {
		t.Errorf("the button opened tab %d, want Profiles", h.ui.tabs.SelectedIndex())
	}
	if h.ui.win.Canvas().Focused() != h.ui.profiles.url {
		t.Error("the link entry does not have the cursor")
	}
	if got := h.ui.profiles.noNodes; !got.Visible() || !strings.Contains(got.Text, "Paste your subscription link") {
		t.Errorf("Profiles' empty list says %q (shown %v)", got.Text, got.Visible())
	}
	if !h.ui.logs.empty.Visible() || !h.ui.routes.noRules.Visible() {
		t.Error("Logs or Routes show no empty state")
	}

	// With a server, the hint goes.
	if err := h.ui.update(func(p *profile.Profile) error { addLinks(t, hy2Link)(p); return nil }); err != nil {
		t.Fatal(err)
	}
	if home.empty.Visible() || h.ui.profiles.noNodes.Visible() {
		t.Error("the empty state stays with a server")
	}
}

func TestGreyedReasonWhole(t *testing.T) {
	h := newHarness(t, Prefs{}, addLinks(t, vmessLink))
	h.ui.Window().Resize(fyne.NewSize(800, 600))
	h.ui.tabs.SelectIndex(1)
	h.pump()
	n := h.ui.profiles.shown[0]
	if n.Unsupported == "" {
		t.Fatal("the VMess node is not greyed")
	}
	var info *widget.Button
	for _, o := range shownObjects(h.ui.profiles.nodeList) {
		if b, ok := o.(*widget.Button); ok && b.Icon != nil && strings.Contains(b.Icon.Name(), "info") {
			info = b
		}
	}
	if info == nil {
		t.Fatal("the greyed row has no button that shows why")
	}
	test.Tap(info)
	if got := overlayTexts(h.ui.win); !strings.Contains(got, n.Unsupported) {
		t.Errorf("the dialog shows %q, want the whole reason %q", got, n.Unsupported)
	}
}

func TestLogLineOpensWhole(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	long := strings.Repeat("a long log line ", 40) + "END"
	h.ui.logs.add([]core.LogRecord{{Time: time.Now(), Level: slog.LevelWarn, Message: long}})
	h.ui.logs.list.Select(0)
	if got := overlayTexts(h.ui.win); !strings.Contains(got, "END") {
		t.Errorf("selecting a log line shows %q, not the whole line", got)
	}
}

func TestMinimumWindowSize(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	min := h.ui.win.Content().MinSize()
	if min.Width < MinWindow.Width || min.Height < MinWindow.Height {
		t.Errorf("the window may shrink to %v, under %v", min, MinWindow)
	}
	if min.Width > 800 || min.Height > 560 {
		t.Errorf("the window needs %v, more than an 800x600 screen holds", min)
	}
}
