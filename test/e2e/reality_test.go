package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

var (
	realityS = setup{name: "vless-reality", kind: harness.VLESSReality}
	visionS  = setup{name: "vless-reality-vision", kind: harness.VLESSRealityVision}
)

// newReality gives s a fresh key pair and short id, and starts the TLS
// site whose handshake the REALITY server borrows.
func newReality(t *testing.T, s *harness.Server) {
	t.Helper()
	keys, err := harness.NewRealityKeys()
	if err != nil {
		t.Fatal(err)
	}
	site, err := harness.StartTLSSite(s.Cert)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	s.Reality, s.ShortID, s.Site = keys, randomHex(4), site
}

// TestRealityRefused: a client with the wrong public key or short id, or
// pointed at a plain TLS site, is refused in the TLS handshake (the SOCKS
// client gets a failure, skiff's log says why), and the site never gets an
// application byte: nothing is proxied through a server that did not
// prove the REALITY key.
func TestRealityRefused(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, su := range []setup{realityS, visionS} {
		for _, tc := range []struct {
			name  string
			wrong func(*harness.Server)
		}{
			{"public-key", func(s *harness.Server) {
				k, err := harness.NewRealityKeys()
				if err != nil {
					t.Fatal(err)
				}
				s.Reality.Public = k.Public
			}},
			{"short-id", func(s *harness.Server) { s.ShortID = randomHex(4) }},
			// The link points at the site itself, which answers with its
			// own (valid for the name) certificate.
			{"plain-tls-site", func(s *harness.Server) { s.Port = s.Site.Port() }},
		} {
			t.Run(su.name+"/"+tc.name, func(t *testing.T) {
				s := newServer(t, su)
				proc := startServer(t, s)
				wrong := *s
				tc.wrong(&wrong)
				p, proxy := startSkiff(t, &wrong, wrong.Link(wrong.Trusting()))
				expectFailure(t, proxy, harness.TCPEcho(t), p, &wrong, failure{steps: []string{"did not prove the REALITY key"}})
				if n := s.Site.AppBytes.Load(); n != 0 {
					t.Fatalf("the TLS site received %d application bytes from a refused client", n)
				}
				if s.Site.Conns.Load() == 0 {
					t.Fatalf("the handshake never reached the TLS site; server log:\n%s", proc.Output())
				}
				if strings.Contains(proc.Output(), "inbound connection to") {
					t.Fatalf("the REALITY server proxied a connection of a refused client:\n%s", proc.Output())
				}
			})
		}
	}
}

// TestRealityInGroup: a REALITY node (with and without Vision) as the
// fallback of a group whose primary is killed carries the new flows.
func TestRealityInGroup(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, su := range []setup{realityS, visionS} {
		t.Run(su.name, func(t *testing.T) {
			primary := newServer(t, trojT)
			primaryProc := startServer(t, primary)
			fallback := newServer(t, su)
			fallbackProc := startServer(t, fallback)
			p, proxy, err := harness.SkiffRun(t, []string{primary.Link(primary.Trusting()), fallback.Link(fallback.Trusting())})
			t.Cleanup(func() {
				p.Stop()
				checkNoSecrets(t, p.Output(), primary)
				checkNoSecrets(t, p.Output(), fallback)
			})
			if err != nil {
				t.Fatal(err)
			}
			testTCPEchoTo(t, proxy, harness.TCPEcho(t), 1<<20)
			primaryProc.Kill()
			after := harness.TCPEcho(t)
			start := time.Now()
			testTCPEchoTo(t, proxy, after, 4<<20)
			t.Logf("first flow after the kill echoed through the REALITY fallback %v after the kill", time.Since(start).Round(time.Millisecond))
			testUDPEcho(t, proxy)
			testHTTPGet(t, proxy)
			if !strings.Contains(fallbackProc.Output(), after) {
				t.Fatalf("the REALITY server never saw %s:\n%s", after, fallbackProc.Output())
			}
		})
	}
}

// TestFingerprints: each uTLS fingerprint carries traffic to sing-box TLS
// servers (Trojan over TLS, VLESS over WebSocket over TLS, whose ALPN must
// be http/1.1 only, and VMess over HTTP/2, whose ALPN must be h2).
func TestFingerprints(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, su := range []setup{trojT, vlessW, {name: "vmess-h2-tls", kind: harness.VMessH2}} {
		t.Run(su.name, func(t *testing.T) {
			s := newServer(t, su)
			startServer(t, s)
			for _, fp := range []string{"chrome", "firefox", "safari", "ios", "edge", "random", "randomized"} {
				t.Run(fp, func(t *testing.T) {
					c := *s
					c.Fingerprint = fp
					_, proxy := startSkiff(t, &c, c.Link(c.Trusting()))
					testTCPEcho(t, proxy, 1<<20)
					testHTTPGet(t, proxy)
				})
			}
		})
	}
}

// TestVisionInnerTLS: a TLS 1.3 connection through Vision (over REALITY
// and over TLS), which the server and skiff switch to direct copy once the
// inner handshake is done (the server traces it), carries 16 MiB each way
// intact.
func TestVisionInnerTLS(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, su := range []setup{visionS, {name: "vless-tcp-tls-vision", kind: harness.VLESSVision}} {
		t.Run(su.name, func(t *testing.T) { testVisionInnerTLS(t, su) })
	}
}

func testVisionInnerTLS(t *testing.T, su setup) {
	s := newServer(t, su)
	s.LogLevel = "trace"
	proc := startServer(t, s)
	_, proxy := startSkiff(t, s, s.Link(s.Trusting()))
	site := tlsEcho(t, s.Cert)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	raw, err := harness.DialSOCKS(ctx, proxy, site)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, &tls.Config{ServerName: "localhost", RootCAs: s.Cert.Pool, MinVersion: tls.VersionTLS13})
	if err := tc.HandshakeContext(ctx); err != nil {
		t.Fatal(err)
	}
	dl, _ := ctx.Deadline()
	tc.SetDeadline(dl)
	echoOver(t, tc, 16<<20, time.Now())
	// sing-box v1.14.1 traces each Vision block with its command (the
	// last number): skiff's last block and the server's say 2, direct.
	out := proc.Output()
	if !regexp.MustCompile(`Xtls Unpadding new block \d+ \d+ padding \d+ 2`).MatchString(out) {
		t.Errorf("skiff's blocks never switched the server to direct copy:\n%s", out)
	}
	if !regexp.MustCompile(`XtlsPadding \d+ \d+ 2`).MatchString(out) {
		t.Errorf("the server never switched its direction to direct copy:\n%s", out)
	}
}

// tlsEcho starts a TLS 1.3 echo server on loopback with cert and returns
// its address.
func tlsEcho(t *testing.T, cert *harness.Cert) string {
	t.Helper()
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := harness.ServeTCP(func(c net.Conn) {
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13})
		defer tc.Close()
		io.Copy(tc, tc)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr()
}

// TestVisionConcurrentStreams: 32 streams of 1 MiB at once through Vision,
// whose first writes are large: each block must start a TLS record (the
// server judges a block's end at a record's end), or streams stall.
func TestVisionConcurrentStreams(t *testing.T) {
	for _, su := range []setup{visionS, {name: "vless-tcp-tls-vision", kind: harness.VLESSVision}} {
		t.Run(su.name, func(t *testing.T) {
			s := newServer(t, su)
			startServer(t, s)
			proxy := startClient(t, s)
			echo := harness.TCPEcho(t)
			errs := make(chan error, 32)
			for range 32 {
				go func() { errs <- echoOnce(proxy, echo, 1<<20) }()
			}
			for range 32 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// echoOnce sends size random bytes through proxy to echo and checks that
// they come back; for many at once (errors, not t.Fatal, off the test
// goroutine).
func echoOnce(proxy, echo string, size int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := harness.DialSOCKS(ctx, proxy, echo)
	if err != nil {
		return err
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	data := make([]byte, size)
	rand.Read(data)
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		werr <- err
	}()
	back := make([]byte, size)
	if _, err := io.ReadFull(c, back); err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	if err := <-werr; err != nil {
		return err
	}
	if !bytes.Equal(back, data) {
		return errors.New("echo: bytes differ")
	}
	return nil
}
