package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestSystemProxyKilled: `skiff run --system-proxy` in a GNOME session
// (real gsettings and dconf, in a D-Bus session and HOME of the test's
// own, so nobody's settings are touched) points GNOME's proxy at its port,
// which carries traffic through a real sing-box VLESS+WS+TLS server; after
// kill -9 the settings still point at the dead port, and the next start of
// skiff puts back exactly what the user had; the run after it, stopped
// cleanly, puts back the same again.
func TestSystemProxyKilled(t *testing.T) {
	if !harness.InDBusSession(t, "TestSystemProxyKilled", "SKIFF_CONFIG_DIR="+filepath.Join(t.TempDir(), "skiff")) {
		return
	}
	gs := func(args ...string) string { t.Helper(); return harness.GSettings(t, args...) }
	dump := func() string { t.Helper(); return harness.GNOMEProxy(t) }
	before := harness.SetUserGNOMEProxy(t)

	srv := newServer(t, setup{kind: harness.VLESSWS})
	startServer(t, srv)
	origin := harness.HTTPOrigin(t)
	p, addr := startSkiff(t, srv, srv.Link(srv.Trusting()), "--system-proxy")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "skiff: system proxy set (gnome"); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	_, port, _ := net.SplitHostPort(addr)
	if m, h, pt := gs("get", "org.gnome.system.proxy", "mode"), gs("get", "org.gnome.system.proxy.http", "host"), gs("get", "org.gnome.system.proxy.http", "port"); m != "'manual'" || h != "'127.0.0.1'" || pt != port {
		t.Fatalf("GNOME's proxy: mode %s, http %s:%s; want 'manual', '127.0.0.1':%s", m, h, pt, port)
	}
	// What an app that follows GNOME's setting does: its HTTP proxy.
	proxy := strings.Trim(gs("get", "org.gnome.system.proxy.http", "host"), "'") + ":" + gs("get", "org.gnome.system.proxy.http", "port")
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxy})}}
	resp, err := c.Get("http://" + origin + "/through-gnome")
	if err != nil {
		t.Fatalf("GET through GNOME's proxy: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != harness.HTTPBody {
		t.Fatalf("through GNOME's proxy: %d %q", resp.StatusCode, body)
	}

	p.Kill()
	<-p.Done()
	if m := gs("get", "org.gnome.system.proxy", "mode"); m != "'manual'" {
		t.Fatalf("after kill -9 the mode is %s: nothing should have restored it yet", m)
	}
	if dump() == before {
		t.Fatal("after kill -9 the settings are the user's again: the test proves nothing")
	}

	// The next start, with or without --system-proxy, restores first.
	p2, _ := startSkiff(t, srv, srv.Link(srv.Trusting()))
	if err := p2.WaitText(ctx, "restored the system proxy settings an earlier run left"); err != nil {
		t.Fatalf("%v\n%s", err, p2.Output())
	}
	if after := dump(); after != before {
		t.Errorf("after the next start:\n%s\nwant, as before:\n%s", after, before)
	}
	p2.Stop()

	// A run stopped cleanly restores by itself.
	p3, _ := startSkiff(t, srv, srv.Link(srv.Trusting()), "--system-proxy")
	if err := p3.WaitText(ctx, "skiff: system proxy set (gnome"); err != nil {
		t.Fatalf("%v\n%s", err, p3.Output())
	}
	p3.Stop()
	if err := p3.WaitText(ctx, "system proxy settings restored"); err != nil {
		t.Fatalf("%v\n%s", err, p3.Output())
	}
	if after := dump(); after != before {
		t.Errorf("after a clean stop:\n%s\nwant, as before:\n%s", after, before)
	}
}
