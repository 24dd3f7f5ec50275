package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envDBusSession marks a test's run inside its own D-Bus session.
const envDBusSession = "SKIFF_TEST_DBUS_SESSION"

// InDBusSession runs the test named name again inside a D-Bus session of
// its own (dbus-run-session) with a temporary HOME, so that GNOME settings
// it changes are nobody's, and reports true in that run. The outer run
// reports false once the inner one passed (it fails the test otherwise).
// Go's caches stay where they are. extraEnv is added to the inner run's
// environment. It skips when dbus-run-session, gsettings or dconf is
// missing (make deps installs them).
func InDBusSession(t *testing.T, name string, extraEnv ...string) bool {
	t.Helper()
	if os.Getenv(envDBusSession) != "" {
		return true
	}
	for _, p := range []string{"dbus-run-session", "gsettings", "dconf"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (make deps installs dbus, dconf-cli, libglib2.0-bin, gsettings-desktop-schemas)", p)
		}
	}
	home := t.TempDir()
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = filepath.Join(os.Getenv("HOME"), "go")
	}
	gocache := os.Getenv("GOCACHE")
	if gocache == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		gocache = filepath.Join(d, "go-build")
	}
	cmd := exec.Command("dbus-run-session", "--", os.Args[0], "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envDBusSession+"=1", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_RUNTIME_DIR="+home, "GSETTINGS_BACKEND=dconf", "GOPATH="+gopath, "GOCACHE="+gocache)
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.CombinedOutput()
	t.Logf("in a D-Bus session of its own:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("the run in the session failed: %v", err)
	}
	return false
}

// GSettings runs gsettings and returns its output, trimmed.
func GSettings(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("gsettings", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("gsettings %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// GNOMEProxy is every proxy setting the session's user has set, exactly:
// which keys are set, and to what (dconf dump /system/proxy/).
func GNOMEProxy(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("dconf", "dump", "/system/proxy/").CombinedOutput()
	if err != nil {
		t.Fatalf("dconf dump: %v: %s", err, out)
	}
	return string(out)
}

// SetUserGNOMEProxy gives the session a user's own proxy settings — an
// automatic proxy with a PAC URL and an HTTP proxy of their company, the
// rest at GNOME's defaults — and returns them (GNOMEProxy).
func SetUserGNOMEProxy(t testing.TB) string {
	t.Helper()
	GSettings(t, "set", "org.gnome.system.proxy", "mode", "'auto'")
	GSettings(t, "set", "org.gnome.system.proxy", "autoconfig-url", "'http://wpad.corp.example/wpad.dat'")
	GSettings(t, "set", "org.gnome.system.proxy.http", "host", "'proxy.corp.example'")
	GSettings(t, "set", "org.gnome.system.proxy.http", "port", "3128")
	return GNOMEProxy(t)
}
