package window

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/app/autostart"
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

// TestSettingsStartAtLogin: the box shows the desktop's login item and
// turns it on and off at once, without Save (a real XDG autostart entry,
// in a temporary config home); a failure says so and shows the truth.
func TestSettingsStartAtLogin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the XDG autostart entry is Linux's")
	}
	cfg, sys := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_CONFIG_DIRS", sys)
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.settings
	if !v.startLogin.Disabled() {
		t.Error("the box is enabled without a login item")
	}
	h.ui.login = &autostart.Item{Tray: "/usr/bin/skiff-tray"}
	v.showLogin()
	if v.startLogin.Disabled() || v.startLogin.Checked {
		t.Fatalf("disabled %v, checked %v; want an enabled, empty box", v.startLogin.Disabled(), v.startLogin.Checked)
	}
	entry := filepath.Join(cfg, "autostart", autostart.EntryName)
	for _, on := range []bool{true, false, true} {
		test.Tap(v.startLogin)
		if v.startLogin.Checked != on {
			t.Fatalf("the box is %v after a tap, want %v", v.startLogin.Checked, on)
		}
		if got, err := h.ui.login.Enabled(); err != nil || got != on {
			t.Fatalf("the login item is %v, %v; want %v", got, err, on)
		}
		if _, err := os.Stat(entry); (err == nil) != on {
			t.Errorf("the entry after turning it %v: %v", on, err)
		}
		if want := map[bool]string{true: "Skiff's tray will start", false: "Skiff will not start"}[on]; !strings.HasPrefix(v.status.Text, want) {
			t.Errorf("status %q, want %q…", v.status.Text, want)
		}
	}
	// The config home cannot hold the entry: the error is shown and the
	// box shows what the desktop has.
	bad := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(bad, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", bad)
	v.showLogin()
	test.Tap(v.startLogin)
	if v.startLogin.Checked || v.status.Importance != widget.DangerImportance || !strings.HasPrefix(v.status.Text, "Start at login could not be changed") {
		t.Errorf("after a failure: checked %v, status %q", v.startLogin.Checked, v.status.Text)
	}
}
