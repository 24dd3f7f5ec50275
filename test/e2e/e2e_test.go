package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// setup is one server configuration the traffic tests run against.
type setup struct {
	name       string
	kind       harness.Kind
	salamander bool
	earlyData  int
	security   string // VMess body cipher; empty: auto
	udpMode    string // TUIC udp_relay_mode; empty: native
	zeroRTT    bool   // TUIC 0-RTT
	noSNI      bool   // TUIC disable_sni
}

var setups = []setup{
	{name: "hysteria2", kind: harness.Hysteria2},
	{name: "hysteria2-salamander", kind: harness.Hysteria2, salamander: true},
	{name: "vless-ws-tls", kind: harness.VLESSWS},
	{name: "vless-ws-tls-earlydata", kind: harness.VLESSWS, earlyData: 2048},
	{name: "vless-tcp-tls", kind: harness.VLESSTCP},
	{name: "trojan-tls", kind: harness.TrojanTLS},
	{name: "trojan-ws-tls", kind: harness.TrojanWS},
	{name: "trojan-ws-tls-earlydata", kind: harness.TrojanWS, earlyData: 2048},
	{name: "vmess-tcp", kind: harness.VMessTCP},
	{name: "vmess-tcp-chacha20", kind: harness.VMessTCP, security: "chacha20-poly1305"},
	{name: "vmess-tcp-none", kind: harness.VMessTCP, security: "none"},
	{name: "vmess-tls-aes128gcm", kind: harness.VMessTLS, security: "aes-128-gcm"},
	{name: "vmess-ws-tls", kind: harness.VMessWS},
	{name: "vmess-h2-tls", kind: harness.VMessH2},
	{name: "tuic-native", kind: harness.TUIC},
	{name: "tuic-quic", kind: harness.TUIC, udpMode: "quic"},
	{name: "tuic-0rtt", kind: harness.TUIC, zeroRTT: true},
	{name: "tuic-nosni", kind: harness.TUIC, noSNI: true},
	{name: "anytls", kind: harness.AnyTLS},
	{name: "vless-tcp-tls-vision", kind: harness.VLESSVision},
	{name: "vless-reality", kind: harness.VLESSReality},
	{name: "vless-reality-vision", kind: harness.VLESSRealityVision},
}

// newServer describes a server of kind with fresh secrets, certificate and
// port, without starting it.
func newServer(t *testing.T, su setup) *harness.Server {
	t.Helper()
	cert, err := harness.NewCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &harness.Server{Kind: su.kind, Port: port, Cert: cert, Path: "/ws", EarlyData: su.earlyData, Security: su.security}
	switch su.kind {
	case harness.Hysteria2:
		s.Password = "pw-" + randomHex(12)
		if su.salamander {
			s.ObfsPassword = "obfs-" + randomHex(12)
		}
	case harness.TrojanTLS, harness.TrojanWS, harness.AnyTLS:
		s.Password = "pw-" + randomHex(12)
	case harness.TUIC:
		s.UUID, s.Password = randomUUID(), "pw-"+randomHex(12)
		s.UDPRelayMode, s.ZeroRTT = su.udpMode, su.zeroRTT
	case harness.VLESSReality, harness.VLESSRealityVision:
		s.UUID = randomUUID()
		newReality(t, s)
	default:
		s.UUID = randomUUID()
	}
	return s
}

// startServer starts sing-box serving s.
func startServer(t *testing.T, s *harness.Server) *harness.Process {
	t.Helper()
	cfg, err := s.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := harness.SingBox(t, "sing-box-server", cfg)
	if s.Kind != harness.Hysteria2 && s.Kind != harness.TUIC {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := harness.WaitTCP(ctx, s.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// clientIsSingBox reports whether the traffic tests use sing-box as the
// client (to check the harness) instead of skiff.
func clientIsSingBox() bool { return os.Getenv("SKIFF_E2E_CLIENT") == "sing-box" }

// startClient starts the client under test for s and returns its proxy
// address (SOCKS5 and HTTP on one port).
func startClient(t *testing.T, s *harness.Server) string {
	t.Helper()
	if clientIsSingBox() {
		port, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := harness.ClientConfig(port, s.ClientOutbound())
		if err != nil {
			t.Fatal(err)
		}
		harness.SingBox(t, "sing-box-client", cfg)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := harness.WaitTCP(ctx, addr); err != nil {
			t.Fatal(err)
		}
		return addr
	}
	_, addr := startSkiff(t, s, s.Link(s.Trusting()))
	return addr
}

// startSkiff runs skiff with link and returns the process and its proxy
// address. When the test ends it checks that skiff's output never showed
// one of s's secrets.
func startSkiff(t *testing.T, s *harness.Server, link string, extra ...string) (*harness.Process, string) {
	t.Helper()
	p, addr, err := harness.SkiffRun(t, []string{link}, extra...)
	t.Cleanup(func() {
		p.Stop()
		checkNoSecrets(t, p.Output(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, addr
}

// checkNoSecrets fails t when out contains one of s's secrets.
func checkNoSecrets(t *testing.T, out string, s *harness.Server) {
	t.Helper()
	for _, secret := range []string{s.Password, s.ObfsPassword, s.UUID, s.SSUserPSK} {
		if secret != "" && strings.Contains(out, secret) {
			t.Errorf("skiff's output contains a secret of the link (%d characters)", len(secret))
		}
	}
}

func TestProxy(t *testing.T) {
	for _, su := range setups {
		t.Run(su.name, func(t *testing.T) {
			s := newServer(t, su)
			startServer(t, s)
			proxy := startClient(t, s)
			t.Run("tcp-echo-16MiB", func(t *testing.T) { testTCPEcho(t, proxy, 16<<20) })
			t.Run("udp-echo", func(t *testing.T) { testUDPEcho(t, proxy) })
			t.Run("http-get", func(t *testing.T) { testHTTPGet(t, proxy) })
		})
	}
}

// testTCPEcho sends size random bytes through the proxy to an echo server
// and checks that the same bytes come back.
func testTCPEcho(t *testing.T, proxy string, size int) {
	testTCPEchoTo(t, proxy, harness.TCPEcho(t), size)
}

// testTCPEchoTo is testTCPEcho with the echo server at echo.
func testTCPEchoTo(t *testing.T, proxy, echo string, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	c, err := harness.DialSOCKS(ctx, proxy, echo)
	if err != nil {
		t.Fatalf("socks connect to %s: %v", echo, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	echoOver(t, c, size, start)
}

// echoOver sends size random bytes on c, whose far end echoes them, and
// checks that the same bytes come back.
func echoOver(t *testing.T, c net.Conn, size int, start time.Time) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	want := sha256.Sum256(data)
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for off := 0; off < len(data); off += 32 << 10 {
			end := min(off+32<<10, len(data))
			if _, err := c.Write(data[off:end]); err != nil {
				werr = err
				return
			}
		}
	}()
	h := sha256.New()
	n, err := io.CopyN(h, c, int64(size))
	wg.Wait()
	if werr != nil {
		t.Fatalf("write after %d bytes echoed: %v", n, werr)
	}
	if err != nil {
		t.Fatalf("read echo: got %d of %d bytes: %v", n, size, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatalf("echo SHA-256 %x, want %x", got, want)
	}
	el := time.Since(start)
	t.Logf("%d KiB echoed intact in %v (%.0f Mbit/s each way)", size>>10, el.Round(time.Millisecond), float64(size)*8/el.Seconds()/1e6)
}

// testUDPEcho checks a 3,000-byte datagram (fragmented by Hysteria2) and
// counts the loss of 1,000 small ones.
func testUDPEcho(t *testing.T, proxy string) {
	echo := harness.UDPEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := harness.AssociateUDP(ctx, proxy)
	if err != nil {
		t.Fatalf("socks udp associate: %v", err)
	}
	defer a.Close()

	big := make([]byte, 3000)
	rand.Read(big)
	buf := make([]byte, 65535)
	ok := false
	for attempt := 1; attempt <= 5 && !ok; attempt++ {
		if err := a.WriteTo(big, echo); err != nil {
			t.Fatalf("send 3000-byte datagram: %v", err)
		}
		a.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			n, _, err := a.ReadFrom(buf)
			if err != nil {
				t.Logf("3000-byte datagram, attempt %d: %v", attempt, err)
				break
			}
			if bytes.Equal(buf[:n], big) {
				ok = true
				break
			}
			if n != len(big) {
				t.Errorf("3000-byte datagram came back as %d bytes", n)
			}
		}
	}
	if !ok {
		t.Fatal("3000-byte datagram never came back intact")
	}

	// At most window datagrams are in flight, so that a busy machine
	// (the tests share two cores) measures the path's loss rather than
	// overflowing socket buffers.
	const count, window = 1000, 64
	var (
		got      [count]bool
		received atomic.Int64
		progress = make(chan struct{}, 1)
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rb := make([]byte, 2048)
		for {
			a.SetReadDeadline(time.Now().Add(3 * time.Second))
			n, _, err := a.ReadFrom(rb)
			if err != nil {
				return
			}
			if n != 64 {
				continue
			}
			i := binary.BigEndian.Uint32(rb)
			if i < count && !got[i] {
				got[i] = true
				if received.Add(1) == count {
					return
				}
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}
	}()
	msg := make([]byte, 64)
	start := time.Now()
	for i := range count {
		for int64(i)-received.Load() >= window {
			select {
			case <-progress:
				continue
			case <-time.After(100 * time.Millisecond):
			}
			break // no echo for 100 ms: count the window as lost and go on
		}
		binary.BigEndian.PutUint32(msg, uint32(i))
		if err := a.WriteTo(msg, echo); err != nil {
			t.Fatalf("send datagram %d: %v", i, err)
		}
	}
	<-done // ends when all came back, or 3 s after the last echo
	lost := count - int(received.Load())
	t.Logf("UDP: %d of %d small datagrams echoed, %d lost (%.1f%%), in %v", received.Load(), count, lost, float64(lost)*100/count, time.Since(start).Round(time.Millisecond))
	if lost > count/5 {
		t.Errorf("lost %d of %d datagrams on loopback (over 20%%)", lost, count)
	}
}

// testHTTPGet fetches a page through the proxy's HTTP side.
func testHTTPGet(t *testing.T, proxy string) {
	origin := harness.HTTPOrigin(t)
	client := &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxy})},
		Timeout:   30 * time.Second,
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + origin + "/through/the/proxy")
	if err != nil {
		t.Fatalf("GET through HTTP proxy: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if resp.StatusCode != 200 || string(body) != harness.HTTPBody || resp.Header.Get("X-Path") != "/through/the/proxy" {
		t.Fatalf("GET: status %d, X-Path %q, body %q", resp.StatusCode, resp.Header.Get("X-Path"), body)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}
