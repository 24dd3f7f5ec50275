package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// stlsMethod is the Shadowsocks method inside ShadowTLS (sing-box's own
// example pairs the two).
const stlsMethod = "2022-blake3-aes-128-gcm"

// stlsServer is a sing-box ShadowTLS v3 server detouring to a Shadowsocks
// inbound, its handshake borrowed from a TLS 1.3 site of the test's on
// loopback.
type stlsServer struct {
	version    int
	site       *harness.TLSSite // v2, v3: TLS 1.3
	site12     net.Listener     // v1: TLS 1.2 (its server watches a 1.2 handshake end)
	cert       *harness.Cert
	port       int
	password   string // ShadowTLS user's
	ssPassword string // Shadowsocks PSK
	dir        string
	proc       *harness.Process
	log        string // output of the servers stopped before
}

func newSTLSServer(t *testing.T, version int) *stlsServer {
	t.Helper()
	dir := t.TempDir()
	cert, err := harness.NewCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &stlsServer{version: version, cert: cert, port: port, password: "st-" + randomHex(12), ssPassword: ssSecret(stlsMethod), dir: dir}
	if version == 1 {
		s.site12 = startTLS12Site(t, cert)
	} else {
		if s.site, err = harness.StartTLSSite(cert); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.site.Close() })
	}
	s.start(t)
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("--- sing-box server's output ---\n%s--- end ---", s.log)
		}
	})
	return s
}

// startTLS12Site is a TLS 1.2 site for v1, which completes handshakes
// and closes; the caller's test stops it.
func startTLS12Site(t *testing.T, cert *harness.Cert) net.Listener {
	t.Helper()
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					io.Copy(io.Discard, c)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln
}

func (s *stlsServer) config() []byte {
	st := map[string]any{
		"type": "shadowtls", "tag": "st-in", "listen": "127.0.0.1", "listen_port": s.port,
		"version": s.version,
		"detour":  "ss-in",
	}
	switch s.version {
	case 3:
		st["users"] = []map[string]any{{"name": "test", "password": s.password}}
		st["strict_mode"] = true
		st["handshake"] = map[string]any{"server": "127.0.0.1", "server_port": s.site.Port()}
	case 2:
		st["password"] = s.password
		st["handshake"] = map[string]any{"server": "127.0.0.1", "server_port": s.site.Port()}
	case 1:
		st["handshake"] = map[string]any{"server": "127.0.0.1", "server_port": s.site12.Addr().(*net.TCPAddr).Port}
	}
	cfg := map[string]any{
		"log": map[string]any{"level": "debug", "timestamp": true},
		"inbounds": []any{
			st,
			map[string]any{
				"type": "shadowsocks", "tag": "ss-in", "listen": "127.0.0.1", "network": "tcp",
				"method": stlsMethod, "password": s.ssPassword,
			},
		},
		"outbounds": []any{map[string]any{"type": "direct", "tag": "direct"}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return b
}

func (s *stlsServer) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := harness.StartSingBox(ctx, harness.NeedSingBox(t), s.dir, "sing-box-shadowtls", s.config())
	if err != nil {
		t.Fatalf("sing-box: %v", err)
	}
	s.proc = p
	if err := harness.WaitTCP(ctx, s.addr()); err != nil {
		t.Fatal(err)
	}
}

func (s *stlsServer) stop() {
	if s.proc != nil {
		s.proc.Stop()
		s.log += s.proc.Output()
		s.proc = nil
	}
}

func (s *stlsServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// link is the ss:// link with the shadow-tls plugin (SIP003 options, as
// mihomo and Skiff write them), the given ShadowTLS password and options
// opt. The site's certificate is the test's own, so verification is
// skipped: it protects nothing here (Shadowsocks encrypts), as in the
// field's configurations.
func (s *stlsServer) link(password string, opt ...string) string {
	opts := "shadow-tls;host=localhost;version=" + strconv.Itoa(s.version) + ";skip-cert-verify"
	if s.version != 1 {
		opts += ";password=" + password
	}
	for _, o := range opt {
		opts += ";" + o
	}
	return "ss://" + url.PathEscape(stlsMethod) + ":" + url.PathEscape(s.ssPassword) + "@" + s.addr() +
		"/?plugin=" + url.QueryEscape(opts) + "#stls-link"
}

// clash is a Clash (mihomo) document with the server as ss + plugin
// shadow-tls, the site's certificate pinned (mihomo's fingerprint).
func (s *stlsServer) clash() string {
	return fmt.Sprintf(`proxies:
  - name: stls-clash
    type: ss
    server: 127.0.0.1
    port: %d
    cipher: %s
    password: %q
    client-fingerprint: chrome
    plugin: shadow-tls
    plugin-opts:
      host: localhost
      password: %q
      skip-cert-verify: true
      fingerprint: %s
      alpn: [h2, http/1.1]
%s`, s.port, stlsMethod, s.ssPassword, s.password, s.cert.PinSHA256, s.clashVersion())
}

// clashVersion is plugin-opts' version line: none for 2, mihomo's
// default.
func (s *stlsServer) clashVersion() string {
	if s.version == 2 {
		return ""
	}
	return fmt.Sprintf("      version: %d\n", s.version)
}

// singBoxOutbounds are sing-box's client form: a shadowsocks outbound
// whose detour is a shadowtls outbound.
func (s *stlsServer) singBoxOutbounds() []any {
	return []any{
		map[string]any{"type": "shadowsocks", "tag": "stls-sb", "method": stlsMethod, "password": s.ssPassword, "detour": "st-out"},
		map[string]any{
			"type": "shadowtls", "tag": "st-out", "server": "127.0.0.1", "server_port": s.port,
			"version": s.version, "password": s.password,
			"tls": map[string]any{
				"enabled": true, "server_name": "localhost", "insecure": true,
				"utls": map[string]any{"enabled": true, "fingerprint": "chrome"},
			},
		},
	}
}

// importDoc writes doc (a Clash or sing-box document) into a file named
// name, imports it into a fresh profile and returns skiff run's flags for
// node.
func importDoc(t *testing.T, doc, name, node string) []string {
	t.Helper()
	sub := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(sub, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "profile")
	if out, err := exec.Command(harness.NeedSkiff(t), "import", "--config-dir", conf, sub).CombinedOutput(); err != nil {
		t.Fatalf("skiff import: %v: %s", err, out)
	}
	return []string{"--config-dir", conf, "--node", node}
}

// startSTLSClient starts the client of one form and returns its proxy. With
// SKIFF_E2E_CLIENT=sing-box every form is sing-box's own client, to check
// the server's configuration.
func startSTLSClient(t *testing.T, s *stlsServer, form string) (*harness.Process, string) {
	t.Helper()
	if clientIsSingBox() {
		port, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		outs := s.singBoxOutbounds()
		cfg, err := harness.ClientConfig(port, outs[0].(map[string]any))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(cfg, &m)
		m["outbounds"] = outs
		cfg, _ = json.Marshal(m)
		p := harness.SingBox(t, "sing-box-client", cfg)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := harness.WaitTCP(ctx, addr); err != nil {
			t.Fatal(err)
		}
		return p, addr
	}
	var links, extra []string
	switch form {
	case "link":
		links = []string{s.link(s.password)}
	case "link-firefox", "link-safari", "link-ios":
		links = []string{s.link(s.password, "client-fingerprint="+strings.TrimPrefix(form, "link-"))}
	case "clash":
		extra = importDoc(t, s.clash(), "clash.yaml", "stls-clash")
	case "sing-box":
		doc, _ := json.Marshal(map[string]any{"outbounds": s.singBoxOutbounds()})
		extra = importDoc(t, string(doc), "sing-box.json", "stls-sb")
	default:
		t.Fatalf("unknown form %q", form)
	}
	return skiffRunSecret(t, []string{s.password, s.ssPassword}, links, extra...)
}

// TestShadowTLS: Shadowsocks through ShadowTLS v3 against sing-box's
// server, in each form a node comes in (an ss:// link with the shadow-tls
// plugin, Clash's plugin: shadow-tls, sing-box's shadowtls detour): 16 MiB
// echoed both ways with a hash check, then again after the server was
// restarted; the site whose handshake is borrowed sees handshakes but
// never a byte of the flows.
//
// The link also runs with the Firefox, Safari and iOS ClientHellos (the
// others with Chrome's). Versions 2 (Clash's form without a version:
// mihomo's default) and 1 (against a TLS 1.2 site) run the same checks in
// two forms each.
func TestShadowTLS(t *testing.T) {
	for _, tc := range []struct {
		version int
		form    string
	}{{3, "link"}, {3, "clash"}, {3, "sing-box"}, {3, "link-firefox"}, {3, "link-safari"}, {3, "link-ios"}, {2, "link"}, {2, "clash"}, {1, "link"}, {1, "sing-box"}} {
		t.Run(fmt.Sprintf("v%d-%s", tc.version, tc.form), func(t *testing.T) {
			s := newSTLSServer(t, tc.version)
			_, proxy := startSTLSClient(t, s, tc.form)
			echo := harness.TCPEcho(t)
			testTCPEchoTo(t, proxy, echo, 16<<20)
			testTCPEchoTo(t, proxy, echo, 64<<10)
			if s.site != nil && s.site.Handshook.Load() == 0 {
				t.Fatal("the site saw no handshake: ShadowTLS did not borrow it")
			}
			if s.site != nil && s.site.AppBytes.Load() != 0 {
				t.Fatalf("the site received %d application bytes: flows leaked to it", s.site.AppBytes.Load())
			}

			s.stop()
			s.start(t)
			testTCPEchoTo(t, proxy, echo, 1<<20)
		})
	}
}

// TestShadowTLSWrongPin: a site whose certificate is not the pinned one
// is refused with the reason, before any byte of the flow.
func TestShadowTLSWrongPin(t *testing.T) {
	s := newSTLSServer(t, 3)
	if clientIsSingBox() {
		t.Skip("Skiff's refusal")
	}
	p, proxy := skiffRunSecret(t, []string{s.password, s.ssPassword}, []string{s.link(s.password, "fingerprint="+strings.Repeat("ab", 32))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := harness.DialSOCKS(ctx, proxy, harness.TCPEcho(t)); err == nil {
		c.Close()
		t.Fatal("the SOCKS connect succeeded through a site with another certificate than the pinned one")
	}
	waitLog(t, p, "does not match the pinned SHA-256")
	if n := s.site.AppBytes.Load(); n != 0 {
		t.Fatalf("the site received %d application bytes", n)
	}
}

// waitLog waits up to 5 s for skiff's output to say text, and fails t
// when it does not.
func waitLog(t *testing.T, p *harness.Process, text string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Output(), text) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(p.Output(), text) {
		t.Fatalf("skiff's log does not say %q:\n%s", text, p.Output())
	}
}

// TestShadowTLSWrongPassword: with a wrong ShadowTLS password the server
// hands the connection to the site, whose handshake then carries no
// server proof: Skiff refuses the connection before any byte of the flow
// (the site receives none), and says why. To anyone else the port is the
// site: a plain TLS client gets its certificate and its page.
func TestShadowTLSWrongPassword(t *testing.T) {
	s := newSTLSServer(t, 3)
	if clientIsSingBox() {
		t.Skip("Skiff's refusal")
	}
	p, proxy, err := harness.SkiffRun(t, []string{s.link("not-" + s.password)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sitesBefore := s.site.Conns.Load()
	if c, err := harness.DialSOCKS(ctx, proxy, harness.TCPEcho(t)); err == nil {
		c.Close()
		t.Fatal("the SOCKS connect succeeded with a wrong ShadowTLS password")
	}
	waitLog(t, p, "did not prove the ShadowTLS password")
	// Reaching the site is its accept: whether its handshake then completes
	// depends on whether the server relays the client's Finished before
	// the client's reset, which the client sends on refusing.
	if s.site.Conns.Load() == sitesBefore {
		t.Fatal("the wrong password's connection did not reach the site")
	}
	if n := s.site.AppBytes.Load(); n != 0 {
		t.Fatalf("the site received %d application bytes from a refused connection", n)
	}
	if strings.Contains(p.Output(), s.password) {
		t.Error("skiff's output contains the ShadowTLS password")
	}

	// The port seen by a browser: the site's certificate and page.
	d := &tls.Dialer{Config: &tls.Config{ServerName: "localhost", RootCAs: s.cert.Pool, MinVersion: tls.VersionTLS13}}
	c, err := d.DialContext(ctx, "tcp", s.addr())
	if err != nil {
		t.Fatalf("a plain TLS client on the ShadowTLS port: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	leaf := c.(*tls.Conn).ConnectionState().PeerCertificates[0]
	if !bytes.Equal(leaf.Raw, s.cert.Leaf.Raw) {
		t.Fatal("the ShadowTLS port answered with another certificate than the site's")
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("the site's page through the ShadowTLS port: %q, %v", line, err)
	}
}

// TestShadowTLSV2WrongPassword: v2 lets the client prove itself but not
// the server, so a wrong password is not noticed at the handshake: the
// server hands the connection to the site, which cannot read the records
// that follow (it reads no application byte), and the flow carries
// nothing back.
func TestShadowTLSV2WrongPassword(t *testing.T) {
	s := newSTLSServer(t, 2)
	if clientIsSingBox() {
		t.Skip("Skiff's flow")
	}
	_, proxy := skiffRunSecret(t, []string{s.password, s.ssPassword}, []string{s.link("not-" + s.password)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The connect succeeds (Shadowsocks' request goes out with the first
	// bytes, and nothing answers it); a refusal there would carry nothing
	// either.
	sitesBefore := s.site.Conns.Load()
	if c, err := harness.DialSOCKS(ctx, proxy, harness.TCPEcho(t)); err == nil {
		defer c.Close()
		// sing-box v1.14.1's server holds such a connection open without
		// passing the site's alert on: nothing comes back, not even an end.
		c.SetDeadline(time.Now().Add(3 * time.Second))
		c.Write([]byte("ping"))
		if n, err := io.ReadFull(c, make([]byte, 4)); err == nil {
			t.Fatalf("%d bytes echoed through a v2 server with a wrong password", n)
		}
	}
	// Reaching the site is its accept: whether its handshake then completes
	// depends on whether the server relays the client's Finished before
	// the client's reset, which the client sends on refusing.
	if s.site.Conns.Load() == sitesBefore {
		t.Fatal("the wrong password's connection did not reach the site")
	}
	if n := s.site.AppBytes.Load(); n != 0 {
		t.Fatalf("the site read %d application bytes: it should not be able to", n)
	}
}
