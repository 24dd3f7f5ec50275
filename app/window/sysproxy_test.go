package window

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/skiffvpn/skiff/app/sysproxy"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
)

// TestSystemProxyModeFollowsTheCore: in system proxy mode, Connect points
// this session's proxy settings at the local proxy and Disconnect puts
// them back. The desktop's settings are kept out of reach (no D-Bus
// session, a temporary HOME where KDE's kioslaverc may be written); what
// is checked is the shell snippet beside the window's preferences.
// sysproxy's own tests, and test/gui, set GNOME's settings in a D-Bus
// session of their own.
func TestSystemProxyModeFollowsTheCore(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_RUNTIME_DIR", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	h := newHarness(t, Prefs{Mode: plan.ModeSystemProxy, Listen: "127.0.0.1:0"}, addLinks(t, hy2Link))
	if c := h.ui.home.controls; !c.sysProxy.Checked || c.vpn.Checked {
		t.Fatalf("mode shown: system proxy %v, VPN %v; want the system proxy alone", c.sysProxy.Checked, c.vpn.Checked)
	}
	snippet := filepath.Join(h.ui.prefsDir, sysproxy.EnvName)
	test.Tap(h.ui.home.toggle)
	h.waitFor("the core to run", func() bool { return h.ctrl.Status().State == core.Running })
	listen := h.ctrl.Status().Listen
	h.waitFor("the system proxy to be set", func() bool {
		h.ui.refresh()
		return strings.HasPrefix(h.ui.home.sysNote.Text, "System proxy set to "+listen+": ") && strings.Contains(h.ui.home.sysNote.Text, "new terminals")
	})
	b, err := os.ReadFile(snippet)
	if err != nil || !strings.Contains(string(b), "http_proxy='http://"+listen+"'") {
		t.Fatalf("shell snippet: %v\n%s", err, b)
	}
	if st := h.ui.status(); st.Route == nil || st.Route.Mode != plan.ModeSystemProxy {
		t.Errorf("the core's route does not say system proxy: %+v", st.Route)
	}
	test.Tap(h.ui.home.toggle)
	h.waitFor("the settings to be put back", func() bool {
		h.ui.refresh()
		_, err := os.Stat(snippet)
		return os.IsNotExist(err) && h.ui.home.sysNote.Hidden
	})
	if sysproxy.New(h.ui.prefsDir).Active() {
		t.Error("state file left after disconnect")
	}
}

// TestCloseTwice: Quit closes the UI and the window's end closes it again;
// a refresh queued before may still run.
func TestCloseTwice(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	h.ui.Close()
	h.ui.Close()
	h.ui.refresh()
	h.pump()
}
