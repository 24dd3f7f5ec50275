package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// failure is what a failed connection through skiff must look like.
type failure struct {
	// lazy allows CONNECT to succeed when the protocol only learns of the
	// failure after its request went out (VLESS answers nothing to an
	// unknown UUID and closes); the stream must then end without data.
	lazy bool
	// steps are words of which skiff's log must contain one, naming the
	// step that failed (matched case-insensitively).
	steps []string
}

// expectFailure connects through proxy to target and checks that the
// client gets a failure quickly (no hang), and that skiff's output names the
// server and the step.
func expectFailure(t *testing.T, proxy, target string, skiff *harness.Process, s *harness.Server, f failure) {
	t.Helper()
	name := s.Name()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	c, err := harness.DialSOCKS(ctx, proxy, target)
	switch {
	case err == nil && f.lazy:
		dl, _ := ctx.Deadline()
		c.SetDeadline(dl)
		c.Write([]byte("ping"))
		b, rerr := io.ReadAll(c)
		c.Close()
		if errors.Is(rerr, os.ErrDeadlineExceeded) {
			t.Fatalf("stream neither failed nor closed within 30 s")
		}
		if len(b) > 0 {
			t.Fatalf("stream delivered %d bytes (%q) through a server that should have refused it", len(b), b)
		}
		t.Logf("CONNECT succeeded, then the stream ended without data (%v) after %v", rerr, time.Since(start).Round(time.Millisecond))
	case err == nil:
		c.Close()
		t.Fatalf("SOCKS CONNECT succeeded; want a failure reply")
	default:
		var re *harness.ReplyError
		if !errors.As(err, &re) {
			t.Fatalf("want a SOCKS failure reply, got %v after %v", err, time.Since(start).Round(time.Millisecond))
		}
		t.Logf("SOCKS failure reply after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}

	// The log line may follow the reply by a moment.
	deadline := time.Now().Add(3 * time.Second)
	for {
		out := strings.ToLower(skiff.Output())
		named := strings.Contains(out, strings.ToLower(s.Addr())) || strings.Contains(out, strings.ToLower(name))
		stepped := false
		for _, w := range f.steps {
			stepped = stepped || strings.Contains(out, strings.ToLower(w))
		}
		if named && stepped {
			for _, line := range strings.Split(skiff.Output(), "\n") {
				if strings.Contains(line, s.Addr()) {
					t.Logf("skiff: %s", line)
					break
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("skiff's output does not name the server (%s or %q: %v) and the step (one of %q: %v):\n%s",
				s.Addr(), name, named, f.steps, stepped, skiff.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func skipIfSingBoxClient(t *testing.T) {
	if clientIsSingBox() {
		t.Skip("failure tests check skiff's own replies and messages")
	}
}

var (
	hy2    = setup{name: "hysteria2", kind: harness.Hysteria2}
	vlessW = setup{name: "vless-ws-tls", kind: harness.VLESSWS, earlyData: 2048}
	vlessT = setup{name: "vless-tcp-tls", kind: harness.VLESSTCP}
	trojT  = setup{name: "trojan-tls", kind: harness.TrojanTLS}
	trojW  = setup{name: "trojan-ws-tls", kind: harness.TrojanWS, earlyData: 2048}
	vmessT = setup{name: "vmess-tls", kind: harness.VMessTLS}
	vmessW = setup{name: "vmess-ws-tls", kind: harness.VMessWS}
	vmessH = setup{name: "vmess-h2-tls", kind: harness.VMessH2}
	tuicN  = setup{name: "tuic", kind: harness.TUIC}
	anyT   = setup{name: "anytls", kind: harness.AnyTLS}
)

func TestWrongCredentials(t *testing.T) {
	skipIfSingBoxClient(t)
	t.Run("hysteria2-password", func(t *testing.T) {
		s := newServer(t, hy2)
		startServer(t, s)
		wrong := *s
		wrong.Password = "wrong-" + randomHex(8)
		p, proxy := startSkiff(t, &wrong, wrong.Link(wrong.Trusting()))
		expectFailure(t, proxy, harness.TCPEcho(t), p, s, failure{steps: []string{"auth"}})
	})
	for _, su := range []setup{vlessW, vlessT, realityS, visionS} {
		t.Run(su.name+"-uuid", func(t *testing.T) {
			s := newServer(t, su)
			startServer(t, s)
			wrong := *s
			wrong.UUID = randomUUID()
			// sing-box closes the stream without a word, after skiff has
			// answered the SOCKS client; skiff reports such a stream only
			// in its per-flow lines, at debug level.
			p, proxy := startSkiff(t, &wrong, wrong.Link(wrong.Trusting()), "--log-level", "debug")
			expectFailure(t, proxy, harness.TCPEcho(t), p, s, failure{lazy: true, steps: []string{""}})
		})
	}
	// Trojan servers answer nothing and VMess servers no response to a
	// stranger: both close the stream once they have read the request.
	for _, tc := range []struct {
		su    setup
		wrong func(*harness.Server)
		steps []string
	}{
		{trojT, func(s *harness.Server) { s.Password = "wrong-" + randomHex(8) }, []string{""}},
		{trojW, func(s *harness.Server) { s.Password = "wrong-" + randomHex(8) }, []string{""}},
		{vmessT, func(s *harness.Server) { s.UUID = randomUUID() }, []string{"without a response"}},
		{vmessW, func(s *harness.Server) { s.UUID = randomUUID() }, []string{"without a response"}},
		// TUIC's server answers nothing to Authenticate: it closes the
		// connection, which skiff reports as the authentication rejected.
		{tuicN, func(s *harness.Server) { s.UUID = randomUUID() }, []string{"authentication rejected"}},
		{tuicN, func(s *harness.Server) { s.Password = "wrong-" + randomHex(8) }, []string{"authentication rejected"}},
		// AnyTLS's server closes the connection without a frame.
		{anyT, func(s *harness.Server) { s.Password = "wrong-" + randomHex(8) }, []string{"authentication rejected"}},
	} {
		t.Run(tc.su.name+"-credentials", func(t *testing.T) {
			s := newServer(t, tc.su)
			startServer(t, s)
			wrong := *s
			tc.wrong(&wrong)
			p, proxy := startSkiff(t, &wrong, wrong.Link(wrong.Trusting()), "--log-level", "debug")
			expectFailure(t, proxy, harness.TCPEcho(t), p, s, failure{lazy: true, steps: tc.steps})
		})
	}
}

func TestServerDown(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, su := range []setup{hy2, vlessW, vlessT, trojT, vmessW, vmessH, tuicN, anyT} {
		t.Run(su.name, func(t *testing.T) {
			s := newServer(t, su) // not started: nothing listens on its port
			p, proxy := startSkiff(t, s, s.Link(s.Trusting()))
			expectFailure(t, proxy, harness.TCPEcho(t), p, s,
				failure{steps: []string{"dial", "connect", "handshake", "timeout", "refused", "no recent network activity"}})
		})
	}
}

func TestCertificateMismatch(t *testing.T) {
	skipIfSingBoxClient(t)
	otherPin := sha256.Sum256([]byte("some other certificate"))
	cases := []struct {
		name  string
		su    setup
		tls   harness.ClientTLS
		steps []string
	}{
		{"hysteria2-unverified", hy2, harness.ClientTLS{}, []string{"certificate", "x509", "tls"}},
		{"hysteria2-wrong-pin", hy2, harness.ClientTLS{Insecure: true, Pin: hex.EncodeToString(otherPin[:])}, []string{"pin", "certificate"}},
		{"vless-ws-tls-unverified", vlessW, harness.ClientTLS{}, []string{"certificate", "x509", "tls"}},
		{"vless-tcp-tls-unverified", vlessT, harness.ClientTLS{}, []string{"certificate", "x509", "tls"}},
		{"trojan-tls-unverified", trojT, harness.ClientTLS{}, []string{"certificate", "x509", "tls"}},
		{"trojan-ws-tls-wrong-pin", trojW, harness.ClientTLS{Insecure: true, Pin: hex.EncodeToString(otherPin[:])}, []string{"pin", "certificate"}},
		{"vmess-tls-unverified", vmessT, harness.ClientTLS{}, []string{"certificate", "x509", "tls"}},
		{"vmess-ws-tls-wrong-pin", vmessW, harness.ClientTLS{Insecure: true, Pin: hex.EncodeToString(otherPin[:])}, []string{"pin", "certificate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.su)
			startServer(t, s)
			p, proxy := startSkiff(t, s, s.Link(tc.tls))
			expectFailure(t, proxy, harness.TCPEcho(t), p, s, failure{steps: tc.steps})
		})
	}
}

// TestServerKilledMidStream kills sing-box during a download: the
// application must see the stream end (error or EOF), not hang, and the
// next connection must fail cleanly too.
func TestServerKilledMidStream(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, tc := range []struct {
		su setup
		// bound is how long the end may take: a killed QUIC peer sends
		// nothing, so the client only notices at its idle timeout.
		bound time.Duration
	}{
		{hy2, 60 * time.Second},
		{vlessW, 20 * time.Second},
		{vlessT, 20 * time.Second},
		{trojT, 20 * time.Second},
		{trojW, 20 * time.Second},
		{vmessT, 20 * time.Second},
		{vmessW, 20 * time.Second},
		{vmessH, 20 * time.Second},
	} {
		t.Run(tc.su.name, func(t *testing.T) {
			s := newServer(t, tc.su)
			server := startServer(t, s)
			p, proxy := startSkiff(t, s, s.Link(s.Trusting()))
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
			c.SetReadDeadline(killed.Add(tc.bound))
			n, err := io.Copy(io.Discard, c)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("stream still open %v after the server was killed (%d bytes after the kill)", tc.bound, n)
			}
			t.Logf("stream ended %v after the kill (%d bytes in flight, err=%v)", time.Since(killed).Round(time.Millisecond), n, err)

			// skiff is still up, and a new connection fails cleanly.
			ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel2()
			start := time.Now()
			c2, err := harness.DialSOCKS(ctx2, proxy, sink.Addr())
			if err == nil {
				c2.Close()
				t.Fatal("SOCKS CONNECT succeeded with the server dead")
			}
			var re *harness.ReplyError
			if !errors.As(err, &re) {
				t.Fatalf("new connection with the server dead: want a SOCKS failure reply, got %v", err)
			}
			t.Logf("new connection refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
			select {
			case <-p.Done():
				t.Fatalf("skiff exited (%s) when its server died", p.ExitStatus())
			default:
			}
		})
	}
}

// TestMalformedLink checks that skiff run refuses a bad link at once, with
// a non-zero exit and a message naming the field, without printing the
// link's secret.
func TestMalformedLink(t *testing.T) {
	skipIfSingBoxClient(t)
	bin := harness.NeedSkiff(t)
	const secret = "hunter2-do-not-print"
	cases := []struct {
		link  string
		field string
	}{
		{"hysteria2://" + secret + "@127.0.0.1:notaport?sni=localhost", "port"},
		{"hysteria2://" + secret + "@127.0.0.1:443?obfs=salamander", "obfs-password"},
		{"hysteria2://" + secret + "@127.0.0.1:443?insecure=1&pinSHA256=xyz", "pinSHA256"},
		{"vless://not-a-uuid-" + secret + "@127.0.0.1:443?security=tls&type=ws", "uuid"},
		{"vless://9d3b5c1e-2f4a-4b6c-8d7e-1f2a3b4c5d6e@127.0.0.1:443?security=tls&type=carrier-pigeon", "type"},
		{"vless://9d3b5c1e-2f4a-4b6c-8d7e-1f2a3b4c5d6e@127.0.0.1:99999?security=tls", "port"},
		{"gopher://" + secret + "@127.0.0.1:70", "scheme"},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			port, err := harness.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, bin, harness.SkiffRunArgs(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), []string{tc.link})...)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("skiff run did not exit within 10 s on a malformed link; output:\n%s", out)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("skiff run exited with %v on %q; want a non-zero exit; output:\n%s", err, redact(tc.link, secret), out)
			}
			if !strings.Contains(strings.ToLower(string(out)), strings.ToLower(tc.field)) {
				t.Errorf("message does not name the field %q:\n%s", tc.field, out)
			}
			if strings.Contains(string(out), secret) {
				t.Errorf("message prints the link's secret:\n%s", redact(string(out), secret))
			}
			t.Logf("exit %d: %s", ee.ExitCode(), strings.TrimSpace(string(out)))
		})
	}
}

func redact(s, secret string) string { return strings.ReplaceAll(s, secret, "[secret]") }
