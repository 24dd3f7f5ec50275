package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// The interop matrix: each protocol's traffic and close checks against
// each server implementation that speaks it (docs/interop.md keeps the
// table). Every case runs its own server and skiff, in parallel.

// serverImpl is a server implementation.
type serverImpl string

const (
	singBox serverImpl = "sing-box"
	xray    serverImpl = "xray"
)

// interopCase is one protocol setup. known names a server whose own bug
// fails a check of this setup, with the check to run instead.
type interopCase struct {
	su     setup
	method string                // Shadowsocks method
	udp    bool                  // the protocol carries UDP through skiff
	known  map[serverImpl]string // server: its bug, checked (udpSizes) against its own client
	// ignores: server: why it passes no close of the app's on (its bug,
	// closeExpect.ignored), checked against its own client.
	ignores map[serverImpl]string
}

var interopCases = []interopCase{
	{su: setup{name: "vless-ws-tls", kind: harness.VLESSWS}, udp: true},
	{su: setup{name: "vless-tcp-tls", kind: harness.VLESSTCP}, udp: true},
	{su: setup{name: "vless-tcp-tls-vision", kind: harness.VLESSVision}, udp: true},
	{su: setup{name: "vless-reality", kind: harness.VLESSReality}, udp: true},
	{su: setup{name: "vless-reality-vision", kind: harness.VLESSRealityVision}, udp: true},
	{su: setup{name: "vmess-ws-tls", kind: harness.VMessWS}, udp: true},
	{su: setup{name: "vmess-tcp", kind: harness.VMessTCP}, udp: true},
	{su: setup{name: "trojan-tls", kind: harness.TrojanTLS}, udp: true},
	{su: setup{name: "trojan-ws-tls", kind: harness.TrojanWS}, udp: true},
	{su: setup{name: "ss2022-aes-128-gcm", kind: harness.Shadowsocks}, method: "2022-blake3-aes-128-gcm", udp: true,
		ignores: map[serverImpl]string{xray: "Xray's Shadowsocks 2022 inbound passes no client close on, not even the end of the flow"}},
	{su: setup{name: "ss-aes-256-gcm", kind: harness.Shadowsocks}, method: "aes-256-gcm", udp: true},
	{su: setup{name: "hysteria2", kind: harness.Hysteria2}, udp: true,
		known: map[serverImpl]string{xray: "Xray's hysteria2 inbound corrupts fragmented client-to-server datagrams (it reuses the buffer its defragmenter holds)"}},
}

// serves reports whether impl can serve kind.
func serves(impl serverImpl, kind harness.Kind) bool {
	if impl == singBox {
		return true
	}
	for _, k := range harness.XrayKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// newInteropServer describes the server of ic with fresh secrets.
func newInteropServer(t *testing.T, ic interopCase) *harness.Server {
	if ic.su.kind == harness.Shadowsocks {
		return newSSServer(t, ssSetup{name: ic.su.name, method: ic.method})
	}
	return newServer(t, ic.su)
}

// startImpl starts impl serving s; called again after the process was
// stopped, it restarts the server on the same port with the same secrets.
func startImpl(t *testing.T, impl serverImpl, s *harness.Server) *harness.Process {
	t.Helper()
	if impl == singBox {
		return startServer(t, s)
	}
	cfg, err := s.XrayConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := harness.Xray(t, "xray-server", cfg)
	if s.Kind != harness.Hysteria2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := harness.WaitTCP(ctx, s.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestInterop(t *testing.T) {
	skipIfSingBoxClient(t)
	harness.NeedSkiff(t)
	harness.NeedSingBox(t)
	harness.NeedXray(t)
	for _, impl := range []serverImpl{singBox, xray} {
		t.Run(string(impl), func(t *testing.T) {
			for _, ic := range interopCases {
				if !serves(impl, ic.su.kind) {
					continue
				}
				t.Run(ic.su.name, func(t *testing.T) {
					t.Parallel()
					testInterop(t, impl, ic)
				})
			}
		})
	}
}

func testInterop(t *testing.T, impl serverImpl, ic interopCase) {
	s := newInteropServer(t, ic)
	server := startImpl(t, impl, s)
	proxy := startClient(t, s)
	t.Run("tcp-echo-2MiB", func(t *testing.T) { testTCPEcho(t, proxy, 2<<20) })
	e := closeExpectFor(impl, ic.su.kind)
	t.Run("close", func(t *testing.T) {
		why, ok := ic.ignores[impl]
		if !ok {
			testCloses(t, proxy, e)
			return
		}
		e.ignored = why
		testCloses(t, proxy, e)
		// The same through the server's own client: a close that did
		// reach the target there would make it skiff's bug.
		t.Run("own-client", func(t *testing.T) { testAppCloses(t, ownClient(t, impl, s), e) })
	})
	if ic.udp {
		t.Run("udp-sizes", func(t *testing.T) {
			bad := udpSizes(t, proxy)
			if bug, ok := ic.known[impl]; ok {
				if len(bad) == 0 {
					t.Errorf("known server bug (%s) did not show: remove the mark", bug)
				}
				t.Logf("sizes %v fail: %s", bad, bug)
				checkServerBug(t, impl, s, bad)
				return
			}
			for _, n := range bad {
				t.Errorf("%d-byte datagram did not come back intact", n)
			}
		})
	}
	t.Run("server-restart", func(t *testing.T) {
		server.Stop()
		startImpl(t, impl, s)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		echo := harness.TCPEcho(t)
		for {
			err := echoOnce(proxy, echo, 64<<10)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("no echo within 30 s of the server's restart: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// checkServerBug runs the UDP sizes that failed through impl's own client
// against the same server: they must fail there too, or the bug is
// Skiff's.
func checkServerBug(t *testing.T, impl serverImpl, s *harness.Server, bad []int) {
	t.Helper()
	if impl != xray {
		t.Fatalf("no own client set up for %s", impl)
	}
	own := udpSizes(t, ownClient(t, impl, s))
	for _, n := range bad {
		if !contains(own, n) {
			t.Errorf("%d-byte datagram fails through skiff but not through %s's own client: not the server's bug", n, impl)
		}
	}
	t.Logf("through %s's own client sizes %v fail too", impl, own)
}

// ownClient starts impl's own client for s and returns its SOCKS5
// address.
func ownClient(t *testing.T, impl serverImpl, s *harness.Server) string {
	t.Helper()
	if impl != xray {
		t.Fatalf("no own client set up for %s", impl)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.XrayClientConfig(port)
	if err != nil {
		t.Fatal(err)
	}
	harness.Xray(t, "xray-client", cfg)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, addr); err != nil {
		t.Fatal(err)
	}
	return addr
}

// udpSizes sends a datagram of each size in 1-3000 bytes to a UDP echo
// server through the proxy (so each crosses both ways) and returns the
// sizes that did not come back intact within three tries of 2 s.
func udpSizes(t *testing.T, proxy string) (bad []int) {
	t.Helper()
	echo := harness.UDPEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := harness.AssociateUDP(ctx, proxy)
	if err != nil {
		t.Fatalf("socks udp associate: %v", err)
	}
	defer a.Close()
	buf := make([]byte, 65535)
	for _, size := range []int{1, 100, 1000, 1200, 1400, 2000, 3000} {
		p := make([]byte, size)
		rand.Read(p)
		ok := false
		for try := 0; try < 3 && !ok; try++ {
			if err := a.WriteTo(p, echo); err != nil {
				t.Fatalf("send %d bytes: %v", size, err)
			}
			a.SetReadDeadline(time.Now().Add(2 * time.Second))
			for !ok {
				n, _, err := a.ReadFrom(buf)
				if err != nil {
					break
				}
				ok = bytes.Equal(buf[:n], p)
			}
		}
		if !ok {
			bad = append(bad, size)
		}
	}
	return bad
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
