package window

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/profile"
)

func TestSettingsProxyAuth(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.settings
	v.proxyUser.SetText("a:b")
	v.proxyPass.SetText("pw")
	v.save()
	if !strings.HasPrefix(v.status.Text, "Local proxy login:") {
		t.Errorf("a username with ':' was not refused: %q", v.status.Text)
	}
	v.proxyUser.SetText("alice")
	v.proxyPass.SetText("")
	v.save()
	if !strings.HasPrefix(v.status.Text, "Local proxy login:") {
		t.Errorf("a username without a password was not refused: %q", v.status.Text)
	}
	v.proxyPass.SetText("pa55 word")
	v.save()
	if !strings.HasPrefix(v.status.Text, "Saved") {
		t.Fatalf("save says %q", v.status.Text)
	}
	p, _ := h.store.Load()
	if p.Settings.Proxy != (profile.Proxy{Username: "alice", Password: "pa55 word"}) {
		t.Errorf("saved %+v", p.Settings.Proxy)
	}
	v.setProfile(p)
	if v.proxyUser.Text != "alice" || v.proxyPass.Text != "pa55 word" {
		t.Errorf("shown %q %q", v.proxyUser.Text, v.proxyPass.Text)
	}
	v.proxyUser.SetText("")
	v.save()
	if p, _ := h.store.Load(); p.Settings.Proxy != (profile.Proxy{}) {
		t.Errorf("an empty username left %+v", p.Settings.Proxy)
	}
}

// TestSettingsAllErrorsMarked: Save lists every bad field's error at the
// top of the view and marks each field; a good Save clears them.
func TestSettingsAllErrorsMarked(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.settings
	v.listen.SetText("0.0.0.0:99999")
	v.mtu.SetText("12")
	v.probe.SetText("ftp://x")
	v.save()
	if lines := strings.Split(v.status.Text, "\n"); len(lines) != 3 || v.status.Hidden {
		t.Fatalf("status %q (hidden %v), want the three errors", v.status.Text, v.status.Hidden)
	}
	if top := v.obj.(*fyne.Container).Objects[0].(*fyne.Container).Objects[1]; top != v.status {
		t.Errorf("the status is not at the top of the view")
	}
	for _, e := range []*widget.Entry{v.listen, v.mtu, v.probe} {
		if v.marked[e] == "" {
			t.Errorf("field %q not marked", e.Text)
		}
	}
	if v.marked[v.proxyUser] != "" {
		t.Errorf("a good field marked: %q", v.marked[v.proxyUser])
	}
	v.listen.SetText("")
	v.mtu.SetText("")
	v.probe.SetText("")
	v.save()
	if !strings.HasPrefix(v.status.Text, "Saved") || len(v.marked) != 0 {
		t.Errorf("status %q, marked %v after a good save", v.status.Text, v.marked)
	}
}
