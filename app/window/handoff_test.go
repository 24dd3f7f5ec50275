package window

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// overlayObjects lists what the window's top overlay (a dialog) draws.
func overlayObjects(w fyne.Window) []fyne.CanvasObject {
	var out []fyne.CanvasObject
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		out = append(out, o)
		switch v := o.(type) {
		case *fyne.Container:
			for _, c := range v.Objects {
				walk(c)
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(v).Objects() {
				walk(c)
			}
		}
	}
	if top := w.Canvas().Overlays().Top(); top != nil {
		walk(top)
	}
	return out
}

// overlayButton finds the button labelled text in the top overlay, or nil.
func overlayButton(w fyne.Window, text string) *widget.Button {
	for _, o := range overlayObjects(w) {
		if b, ok := o.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	return nil
}

// overlayText reports whether a label in the top overlay contains s.
func overlayText(w fyne.Window, s string) bool {
	for _, o := range overlayObjects(w) {
		if l, ok := o.(*widget.Label); ok && strings.Contains(l.Text, s) {
			return true
		}
	}
	return false
}

// TestHandoffOffersTheLink: a clash:// link handed to the window (by a
// second launch) shows the window and asks before it imports; confirmed,
// the subscription is added under the link's name. The dialog shows the
// host, not the token.
func TestHandoffOffersTheLink(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, hy2Link+"\n"+vlessLink+"\n")
	}))
	defer srv.Close()
	h := newHarness(t, Prefs{}, nil)
	h.ui.hideWindow()
	sub := srv.URL + "/sub?token=secret123"
	h.ui.Handoff([]string{"--log-level=debug", "clash://install-config?url=" + url.QueryEscape(sub) + "&name=My%20Airport"})
	w := h.ui.Window()
	h.waitFor("the confirmation", func() bool { return overlayButton(w, "Add") != nil })
	if !h.ui.shown {
		t.Error("the window was not shown")
	}
	if !overlayText(w, "My Airport") || !overlayText(w, strings.TrimPrefix(srv.URL, "http://")) {
		t.Error("the dialog does not name the subscription and its host")
	}
	if overlayText(w, "secret123") {
		t.Error("the dialog shows the URL's token")
	}
	if len(h.ui.profiles.p.Subscriptions) != 0 {
		t.Fatal("imported before the user confirmed")
	}
	test.Tap(overlayButton(w, "Add"))
	v := h.ui.profiles
	h.waitFor("the nodes", func() bool { return len(v.Shown()) == 2 })
	if len(v.p.Subscriptions) != 1 || v.p.Subscriptions[0].Name != "My Airport" || v.p.Subscriptions[0].URL != sub {
		t.Fatalf("subscriptions %+v", v.p.Subscriptions)
	}
}

// TestHandoffRefusesBadLinks: a link to a file or with no URL is refused
// with the reason, and nothing is offered.
func TestHandoffRefusesBadLinks(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	h.ui.Handoff([]string{"clash://install-config?url=file:///etc/passwd"})
	h.pump()
	if overlayButton(h.ui.Window(), "Add") != nil {
		t.Fatal("a file:// link was offered")
	}
	if !strings.Contains(h.ui.profiles.status.Text, "not http(s)") {
		t.Errorf("Profiles says %q", h.ui.profiles.status.Text)
	}
}
