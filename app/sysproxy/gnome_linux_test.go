package sysproxy

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The GNOME tests run against real gsettings and dconf in a D-Bus session
// of their own (dbus-run-session) with a temporary HOME, so that they
// never touch the settings of whoever runs them. The test re-executes its
// own binary inside that session.
const envInSession = "SKIFF_SYSPROXY_TEST_SESSION"

// inSession runs the test named name inside a private D-Bus session, or
// returns true when this process is that run.
func inSession(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv(envInSession) != "" {
		return true
	}
	for _, p := range []string{"dbus-run-session", "gsettings", "dconf"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (make deps installs dbus, dconf-cli, libglib2.0-bin, gsettings-desktop-schemas)", p)
		}
	}
	home := t.TempDir()
	cmd := exec.Command("dbus-run-session", "--", os.Args[0], "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envInSession+"=1", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_RUNTIME_DIR="+home, "DBUS_SESSION_BUS_ADDRESS=", "GSETTINGS_BACKEND=dconf")
	out, err := cmd.CombinedOutput()
	t.Logf("in a D-Bus session of its own:\n%s", out)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatal("the run in the session did not pass")
	}
	return false
}

func gsettings(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("gsettings", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("gsettings %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// dconfDump is every proxy setting the user has set, exactly: values and
// which keys are set at all.
func dconfDump(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("dconf", "dump", "/system/proxy/").CombinedOutput()
	if err != nil {
		t.Fatalf("dconf dump: %v: %s", err, out)
	}
	return string(out)
}

// userSettings gives the session a user's own proxy settings: an
// automatic proxy with its PAC URL and an HTTP proxy of their company,
// the rest at GNOME's defaults.
func userSettings(t *testing.T) string {
	gsettings(t, "set", "org.gnome.system.proxy", "mode", "'auto'")
	gsettings(t, "set", "org.gnome.system.proxy", "autoconfig-url", "'http://wpad.corp.example/wpad.dat'")
	gsettings(t, "set", "org.gnome.system.proxy.http", "host", "'proxy.corp.example'")
	gsettings(t, "set", "org.gnome.system.proxy.http", "port", "3128")
	before := dconfDump(t)
	if !strings.Contains(before, "mode='auto'") || strings.Contains(before, "ignore-hosts") {
		t.Fatalf("the session's settings are not as set:\n%s", before)
	}
	return before
}

func checkPointsAt(t *testing.T, addr netip.AddrPort) {
	t.Helper()
	port := fmt.Sprint(addr.Port())
	for k, want := range map[string]string{
		"org.gnome.system.proxy mode":       "'manual'",
		"org.gnome.system.proxy.http host":  "'127.0.0.1'",
		"org.gnome.system.proxy.http port":  port,
		"org.gnome.system.proxy.https host": "'127.0.0.1'",
		"org.gnome.system.proxy.https port": port,
		"org.gnome.system.proxy.socks host": "'127.0.0.1'",
		"org.gnome.system.proxy.socks port": port,
	} {
		schema, key, _ := strings.Cut(k, " ")
		if got := gsettings(t, "get", schema, key); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	ignore := gsettings(t, "get", "org.gnome.system.proxy", "ignore-hosts")
	for _, want := range []string{"'localhost'", "'127.0.0.0/8'", "'192.168.0.0/16'", "'10.0.0.0/8'", "'::1'"} {
		if !strings.Contains(ignore, want) {
			t.Errorf("ignore-hosts %s lacks %s", ignore, want)
		}
	}
}

// TestGNOMEConnectDisconnect: Enable points GNOME at Skiff's port, Disable
// puts back exactly what the user had (values, and which keys were set).
func TestGNOMEConnectDisconnect(t *testing.T) {
	if !inSession(t, "TestGNOMEConnectDisconnect") {
		return
	}
	before := userSettings(t)
	dir := t.TempDir()
	p := New(dir)
	addr := netip.MustParseAddrPort("127.0.0.1:17890")
	names, err := p.Enable(context.Background(), Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("set: %v", names)
	if names[0] != "gnome" {
		t.Fatalf("stores %v, want gnome first", names)
	}
	checkPointsAt(t, addr)
	if _, err := os.Stat(filepath.Join(dir, EnvName)); err != nil {
		t.Errorf("no shell snippet: %v", err)
	}
	if err := p.Disable(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dconfDump(t); after != before {
		t.Errorf("after Disable:\n%s\nwant, as before:\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(dir, EnvName)); !os.IsNotExist(err) {
		t.Errorf("shell snippet left: %v", err)
	}
	if p.Active() {
		t.Error("state file left")
	}
}

// TestGNOMEKilled: a process that set the proxy is killed with SIGKILL;
// the settings still point at its dead port and its shell snippet sets
// nothing; the next start (Recover) puts back what the user had.
func TestGNOMEKilled(t *testing.T) {
	if !inSession(t, "TestGNOMEKilled") {
		return
	}
	before := userSettings(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperEnable$")
	cmd.Env = append(os.Environ(), "SKIFF_SYSPROXY_HELPER="+dir)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	on := false
	for sc.Scan() {
		if sc.Text() == "enabled" {
			on = true
			break
		}
	}
	if !on {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the helper did not enable the proxy")
	}
	addr := netip.MustParseAddrPort("127.0.0.1:17891")
	checkPointsAt(t, addr)
	snippet := filepath.Join(dir, EnvName)
	if out, _ := exec.Command("sh", "-c", ". "+snippet+"; echo \"$http_proxy\"").Output(); strings.TrimSpace(string(out)) != "http://"+addr.String() {
		t.Errorf("while the process lives, a new shell gets http_proxy=%q", out)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if out, _ := exec.Command("sh", "-c", ". "+snippet+"; echo \"$http_proxy$all_proxy\"").Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("after the kill, a new shell still gets a proxy: %q", out)
	}
	checkPointsAt(t, addr) // nothing could restore it yet
	p := New(dir)
	restored, err := p.Recover(context.Background())
	if err != nil || !restored {
		t.Fatalf("Recover: %v, %v", restored, err)
	}
	if after := dconfDump(t); after != before {
		t.Errorf("after the next start:\n%s\nwant, as before:\n%s", after, before)
	}
	if _, err := os.Stat(snippet); !os.IsNotExist(err) {
		t.Errorf("shell snippet left: %v", err)
	}
}

// TestHelperEnable is the process TestGNOMEKilled kills.
func TestHelperEnable(t *testing.T) {
	dir := os.Getenv("SKIFF_SYSPROXY_HELPER")
	if dir == "" {
		t.Skip("a helper process of TestGNOMEKilled")
	}
	if _, err := New(dir).Enable(context.Background(), Config{Addr: netip.MustParseAddrPort("127.0.0.1:17891")}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("enabled")
	time.Sleep(time.Minute)
}
