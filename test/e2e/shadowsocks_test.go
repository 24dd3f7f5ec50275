package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// ssSetup is one Shadowsocks server configuration.
type ssSetup struct {
	name      string
	method    string
	multiUser bool   // iPSK:uPSK (SIP023 identity headers)
	plugin    string // harness.Plugin*; "" none
}

var ssSetups = []ssSetup{
	{name: "ss2022-aes-128-gcm", method: "2022-blake3-aes-128-gcm"},
	{name: "ss2022-aes-256-gcm", method: "2022-blake3-aes-256-gcm"},
	{name: "ss2022-chacha20-poly1305", method: "2022-blake3-chacha20-poly1305"},
	{name: "ss2022-aes-128-gcm-multiuser", method: "2022-blake3-aes-128-gcm", multiUser: true},
	{name: "ss2022-aes-256-gcm-multiuser", method: "2022-blake3-aes-256-gcm", multiUser: true},
	{name: "ss-aes-128-gcm", method: "aes-128-gcm"},
	{name: "ss-aes-256-gcm", method: "aes-256-gcm"},
	{name: "ss-chacha20-ietf-poly1305", method: "chacha20-ietf-poly1305"},
	{name: "ss-xchacha20-ietf-poly1305", method: "xchacha20-ietf-poly1305"},
	{name: "ss2022-obfs-http", method: "2022-blake3-aes-128-gcm", plugin: harness.PluginObfsHTTP},
	{name: "ss-obfs-tls", method: "aes-128-gcm", plugin: harness.PluginObfsTLS},
	{name: "ss-v2ray-plugin-ws", method: "aes-256-gcm", plugin: harness.PluginV2ray},
	{name: "ss2022-v2ray-plugin-ws-tls", method: "2022-blake3-aes-128-gcm", plugin: harness.PluginV2rayTLS},
}

// ssKeyLen is the PSK length of a 2022 method; 0 for the classic ones.
func ssKeyLen(method string) int {
	switch method {
	case "2022-blake3-aes-128-gcm":
		return 16
	case "2022-blake3-aes-256-gcm", "2022-blake3-chacha20-poly1305":
		return 32
	}
	return 0
}

func ssSecret(method string) string {
	n := ssKeyLen(method)
	if n == 0 {
		return "pw-" + randomHex(10)
	}
	b := make([]byte, n)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// newSSServer describes a Shadowsocks server with fresh keys and ports.
func newSSServer(t *testing.T, su ssSetup) *harness.Server {
	t.Helper()
	cert, err := harness.NewCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &harness.Server{Kind: harness.Shadowsocks, Port: port, Cert: cert, Method: su.method, Password: ssSecret(su.method), Plugin: su.plugin}
	if su.multiUser {
		s.SSUserPSK = ssSecret(su.method)
	}
	if su.plugin != "" {
		harness.NeedPlugin(t, su.plugin)
		if s.PluginInnerPort, err = harness.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// startSSServer starts sing-box serving s, and its plugin server in front.
func startSSServer(t *testing.T, s *harness.Server) (server *harness.Process) {
	t.Helper()
	if s.Plugin == "" {
		return startServer(t, s)
	}
	cfg, err := s.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := harness.SingBox(t, "sing-box-server", cfg)
	harness.StartSSPlugin(t, s)
	return p
}

func TestShadowsocks(t *testing.T) {
	for _, su := range ssSetups {
		t.Run(su.name, func(t *testing.T) {
			s := newSSServer(t, su)
			startSSServer(t, s)
			proxy := startClient(t, s)
			t.Run("tcp-echo-16MiB", func(t *testing.T) { testTCPEcho(t, proxy, 16<<20) })
			if su.plugin == "" {
				// The plugins carry TCP only.
				t.Run("udp-echo", func(t *testing.T) { testUDPEcho(t, proxy) })
			}
			t.Run("http-get", func(t *testing.T) { testHTTPGet(t, proxy) })
		})
	}
}

// TestShadowsocksUDPOverTCP: with udp-over-tcp the UDP echo goes inside a
// stream (sing-box's UoT, both versions) to a server that serves TCP only,
// also through v2ray-plugin, which carries no Shadowsocks UDP.
func TestShadowsocksUDPOverTCP(t *testing.T) {
	for _, tc := range []struct {
		su      ssSetup
		version int
	}{
		{ssSetups[0], 2},
		{ssSetups[4], 2},
		{ssSetups[6], 1},
		{ssSetups[11], 2},
	} {
		t.Run(fmt.Sprintf("%s-v%d", tc.su.name, tc.version), func(t *testing.T) {
			s := newSSServer(t, tc.su)
			s.SSUoT = tc.version
			startSSServer(t, s)
			proxy := startClient(t, s)
			t.Run("udp-echo", func(t *testing.T) { testUDPEcho(t, proxy) })
			t.Run("tcp-echo-1MiB", func(t *testing.T) { testTCPEcho(t, proxy, 1<<20) })
		})
	}
}

func TestShadowsocksWrongPassword(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, su := range []ssSetup{ssSetups[0], ssSetups[3], ssSetups[5]} {
		t.Run(su.name, func(t *testing.T) {
			s := newSSServer(t, su)
			startSSServer(t, s)
			wrong := *s
			if su.multiUser {
				wrong.SSUserPSK = ssSecret(su.method)
			} else {
				wrong.Password = ssSecret(su.method)
			}
			// A Shadowsocks server confirms nothing: the stream is
			// accepted, then ends without data once the server refuses
			// the request; skiff says so in its per-flow lines (debug).
			p, proxy := startSkiff(t, &wrong, wrong.Link(harness.ClientTLS{}), "--log-level", "debug")
			expectFailure(t, proxy, harness.TCPEcho(t), p, s, failure{lazy: true, steps: []string{"shadowsocks: response from " + s.Addr()}})
		})
	}
}

func TestShadowsocksServerKilledMidStream(t *testing.T) {
	skipIfSingBoxClient(t)
	s := newSSServer(t, ssSetups[0])
	server := startSSServer(t, s)
	p, proxy := startSkiff(t, s, s.Link(harness.ClientTLS{}))
	sink, err := harness.ServeTCP(harness.SinkSource)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := harness.DialSOCKS(ctx, proxy, sink.Addr())
	if err != nil {
		t.Fatalf("socks connect: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{harness.SinkDownload}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.CopyN(io.Discard, c, 4<<20); err != nil {
		t.Fatalf("download before the kill: %v", err)
	}
	server.Kill()
	killed := time.Now()
	c.SetReadDeadline(killed.Add(20 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("stream still open 20 s after the server was killed (%d bytes after the kill)", n)
	}
	t.Logf("stream ended %v after the kill (%d bytes in flight, err=%v)", time.Since(killed).Round(time.Millisecond), n, err)
	expectFailure(t, proxy, sink.Addr(), p, s, failure{steps: []string{"dial", "refused"}})
}

// TestShadowsocksFallback puts Shadowsocks behind a Hysteria2 primary whose
// server is down: flows must go through the Shadowsocks member.
func TestShadowsocksFallback(t *testing.T) {
	skipIfSingBoxClient(t)
	dead := newServer(t, hy2) // not started
	s := newSSServer(t, ssSetups[0])
	startSSServer(t, s)
	p, proxy, err := harness.SkiffRun(t, []string{dead.Link(dead.Trusting()), s.Link(harness.ClientTLS{})})
	t.Cleanup(func() {
		p.Stop()
		checkNoSecrets(t, p.Output(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("tcp-echo-1MiB", func(t *testing.T) { testTCPEcho(t, proxy, 1<<20) })
	t.Run("udp-echo", func(t *testing.T) { testUDPEcho(t, proxy) })
	t.Run("http-get", func(t *testing.T) { testHTTPGet(t, proxy) })
}
