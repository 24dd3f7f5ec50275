package gui

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestWindowSystemProxyKilled: the window in system proxy mode, in a GNOME
// session of the test's own (real gsettings and dconf), points GNOME's
// proxy at its port when connected; kill -9 of the window leaves it; the
// window started again puts back exactly what the user had.
func TestWindowSystemProxyKilled(t *testing.T) {
	paths := needTools(t)
	if !harness.InDBusSession(t, "TestWindowSystemProxyKilled") {
		return
	}
	bin := harness.NeedSkiff(t)
	srv := hy2Server(t)
	origin := bigOrigin(t)
	before := harness.SetUserGNOMEProxy(t)

	display := startXvfb(t, paths["Xvfb"], 1024, 768)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := writeProfile(t, srv, listen, "http://"+origin+"/generate_204")
	prefs := fmt.Sprintf(`{"listen": %q, "mode": "system-proxy"}`, listen)
	if err := os.WriteFile(filepath.Join(dir, "gui.json"), []byte(prefs), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DISPLAY", display)
	t.Setenv("LIBGL_ALWAYS_SOFTWARE", "1")
	t.Setenv("SKIFF_CONFIG_DIR", dir)
	gui := harness.Start(t, "skiff-gui", bin)
	id := findWindow(t, display)
	fitWindow(t, display, id, 1024, 768)
	clickConnect(t, display, id, listen)

	pointsAtSkiff := func() bool {
		return harness.GSettings(t, "get", "org.gnome.system.proxy", "mode") == "'manual'" &&
			harness.GSettings(t, "get", "org.gnome.system.proxy.http", "port") == strconv.Itoa(port) &&
			harness.GSettings(t, "get", "org.gnome.system.proxy.http", "host") == "'127.0.0.1'"
	}
	waitUntil(t, "GNOME's proxy to point at the window's port", pointsAtSkiff)
	if n := fetchThrough(t, listen, origin); n < 1<<20 {
		t.Fatalf("fetched %d bytes through the proxy GNOME points at", n)
	}
	time.Sleep(time.Second)
	screenshot(t, display, "gui-system-proxy-on")

	gui.Kill()
	<-gui.Done()
	if !pointsAtSkiff() {
		t.Fatal("after kill -9 GNOME's proxy changed: nothing should have restored it yet")
	}
	again := harness.Start(t, "skiff-gui-again", bin)
	waitUntil(t, "the window started again to put back the user's settings", func() bool { return harness.GNOMEProxy(t) == before })
	findWindow(t, display)
	again.Kill()
	<-again.Done()
}

// waitUntil polls cond for up to 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
