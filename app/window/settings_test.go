package window

import (
	"strings"
	"testing"

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
