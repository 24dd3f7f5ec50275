package harness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

func TestCertVerifiesForLoopbackNames(t *testing.T) {
	c, err := NewCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			s, err := ln.Accept()
			if err != nil {
				return
			}
			s.(*tls.Conn).Handshake()
			s.Close()
		}
	}()
	for _, tc := range []struct {
		serverName string
		pool       bool
		ok         bool
	}{
		{"localhost", true, true},
		{"127.0.0.1", true, true},
		{"example.com", true, false}, // name not in the certificate
		{"localhost", false, false},  // not in the system roots
	} {
		cfg := &tls.Config{ServerName: tc.serverName}
		if tc.pool {
			cfg.RootCAs = c.Pool
		}
		conn, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if (err == nil) != tc.ok {
			t.Errorf("%s (pool %v): handshake error %v, want ok=%v", tc.serverName, tc.pool, err, tc.ok)
		}
		if err == nil {
			sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].Raw)
			if hex.EncodeToString(sum[:]) != c.PinSHA256 {
				t.Errorf("PinSHA256 %s does not match the served certificate", c.PinSHA256)
			}
			conn.Close()
		}
	}
}

func TestProcessOutputAndExit(t *testing.T) {
	p, err := StartProcess("sh", "/bin/sh", "-c", "echo ready; echo oops >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "ready"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitText(ctx, "never printed"); err == nil {
		t.Fatal("WaitText succeeded for text the process never printed")
	}
	if code := p.ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if out := p.Output(); out != "ready\noops\n" {
		t.Errorf("output %q", out)
	}
}

func TestProcessStopEndsALongRunner(t *testing.T) {
	p, err := StartProcess("sleep", "/bin/sleep", "60")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.Stop()
	p.Stop() // idempotent
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("Stop took %v", el)
	}
	if p.ExitStatus() == "running" {
		t.Error("process still running after Stop")
	}
}

// TestSOCKSAgainstSingBox checks the SOCKS5 client (CONNECT and UDP
// ASSOCIATE) against sing-box's mixed inbound with a direct outbound.
func TestSOCKSAgainstSingBox(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ClientConfig(port, map[string]any{"type": "direct", "tag": "direct"})
	if err != nil {
		t.Fatal(err)
	}
	SingBox(t, "sing-box-mixed", cfg)
	proxy := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := WaitTCP(ctx, proxy); err != nil {
		t.Fatal(err)
	}

	c, err := DialSOCKS(ctx, proxy, TCPEcho(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := []byte("through sing-box's socks5")
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("tcp echo: %q, %v", got, err)
	}

	a, err := AssociateUDP(ctx, proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	echo := UDPEcho(t)
	a.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := a.WriteTo(msg, echo); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	n, from, err := a.ReadFrom(buf)
	if err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("udp echo: %q, %v", buf[:n], err)
	}
	if from.String() != echo {
		t.Errorf("udp reply from %s, want %s", from, echo)
	}
}

func TestSinkSource(t *testing.T) {
	s, err := ServeTCP(SinkSource)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte{SinkDownload})
	if n, err := io.CopyN(io.Discard, c, 8<<20); err != nil {
		t.Fatalf("download: %d bytes: %v", n, err)
	}
	c.Close()

	u, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	u.SetDeadline(time.Now().Add(10 * time.Second))
	u.Write([]byte{SinkUpload})
	if _, err := u.Write(make([]byte, 8<<20)); err != nil {
		t.Fatalf("upload: %v", err)
	}
	u.Close()
}
