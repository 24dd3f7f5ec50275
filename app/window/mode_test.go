package window

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// envModeSession marks the run of TestModeChangeWhileConnected inside a
// D-Bus session of its own.
const envModeSession = "SKIFF_WINDOW_TEST_DBUS"

// TestModeChangeWhileConnected: changing Mode on Home while connected
// applies without a new connection: Local → System proxy points GNOME's
// proxy (real gsettings, in a D-Bus session and HOME of the test's own)
// at the local proxy, System proxy → Local puts it back; a mode the
// profile cannot run (system proxy with proxy credentials) is refused,
// the dropdown goes back and the note says why.
func TestModeChangeWhileConnected(t *testing.T) {
	if os.Getenv(envModeSession) == "" {
		for _, p := range []string{"dbus-run-session", "gsettings", "dconf"} {
			if _, err := exec.LookPath(p); err != nil {
				t.Skipf("%s is not installed", p)
			}
		}
		home := t.TempDir()
		cmd := exec.Command("dbus-run-session", "--", os.Args[0], "-test.run", "^TestModeChangeWhileConnected$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envModeSession+"=1", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_RUNTIME_DIR="+home, "GSETTINGS_BACKEND=dconf")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestModeChangeWhileConnected") {
			t.Fatalf("in a D-Bus session: %v\n%s", err, out)
		}
		return
	}
	gset := func(args ...string) string {
		out, err := exec.Command("gsettings", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("gsettings %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gset("set", "org.gnome.system.proxy", "mode", "'none'")
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link))
	home := h.ui.home
	home.toggle.OnTapped()
	h.waitFor("the core to run", func() bool { return home.toggle.Text == "Disconnect" && h.ctrl.Status().State == core.Running })
	since, listen := h.ctrl.Status().Since, h.ctrl.Status().Listen
	_, port, _ := strings.Cut(listen, ":")

	test.Tap(home.controls.sysProxy)
	h.waitFor("GNOME's proxy to point at the local proxy", func() bool {
		h.ui.refresh()
		return gset("get", "org.gnome.system.proxy", "mode") == "'manual'" && gset("get", "org.gnome.system.proxy.http", "port") == port
	})
	if st := h.ctrl.Status(); !st.Since.Equal(since) {
		t.Errorf("the core connected again for the system proxy (since %v, was %v)", st.Since, since)
	}
	if h.ui.Prefs().Mode != plan.ModeSystemProxy {
		t.Errorf("the mode was not kept: %q", h.ui.Prefs().Mode)
	}

	test.Tap(home.controls.sysProxy) // off: the local proxy alone
	h.waitFor("GNOME's proxy to be put back", func() bool {
		h.ui.refresh()
		return gset("get", "org.gnome.system.proxy", "mode") == "'none'"
	})
	if st := h.ctrl.Status(); !st.Since.Equal(since) {
		t.Errorf("the core connected again for the local proxy")
	}

	// With proxy credentials the system proxy cannot be set: refused.
	if err := h.ui.update(func(p *profile.Profile) error {
		p.Settings.Proxy = profile.Proxy{Username: "u", Password: "p"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	test.Tap(home.controls.sysProxy)
	h.waitFor("the refusal", func() bool { return strings.HasPrefix(home.modeNote.Text, "Stayed as it was") })
	if home.controls.sysProxy.Checked || h.ui.Prefs().Mode != plan.ModeProxy {
		t.Errorf("after a refusal the system proxy shows %v, saved %q", home.controls.sysProxy.Checked, h.ui.Prefs().Mode)
	}
	if gset("get", "org.gnome.system.proxy", "mode") != "'none'" {
		t.Error("GNOME's proxy was set although the mode was refused")
	}
}
