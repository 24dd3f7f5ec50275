package nettest

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"io"
	"net"
	"testing"
	"time"
)

func TestTCPEcho(t *testing.T) {
	addr := TCPEcho(t)
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := bytes.Repeat([]byte("echo"), 64<<10)
	go func() {
		c.Write(msg)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c) // ends only if the echo closes after our EOF
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echoed %d bytes, want the %d sent", len(got), len(msg))
	}
}

// TestTCPEchoCleanupClosesOpenConns checks that a connection the test left
// open does not keep the cleanup waiting, and is closed by it.
func TestTCPEchoCleanupClosesOpenConns(t *testing.T) {
	var c net.Conn
	t.Run("leaves a conn open", func(t *testing.T) {
		var err error
		c, err = net.Dial("tcp", TCPEcho(t).String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	})
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after cleanup = %d, %v; want EOF", n, err)
	}
}

func TestUDPEcho(t *testing.T) {
	addr := UDPEcho(t)
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 65535)
	for _, size := range []int{1, 1200, 60000} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		if _, err := c.WriteToUDPAddrPort(msg, addr); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if from != addr || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("%d bytes: got %d from %v, want the same back from %v", size, n, from, addr)
		}
	}
}

func TestClosedPort(t *testing.T) {
	addr := ClosedPort(t)
	if !addr.Addr().IsLoopback() || addr.Port() == 0 {
		t.Fatalf("ClosedPort = %v, want a loopback address with a port", addr)
	}
	if c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second); err == nil {
		c.Close()
		t.Fatalf("dial to %v succeeded", addr)
	}
}

// TestSelfSigned serves the certificate on loopback and checks that a
// client trusting only it accepts both the name and the IP, refuses
// another name, and that the pin is the SHA-256 of what the server sent.
func TestSelfSigned(t *testing.T) {
	cert, pin := SelfSigned(t, "peer.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	for _, tt := range []struct {
		serverName string
		ok         bool
	}{
		{"peer.test", true},
		{"127.0.0.1", true},
		{"other.test", false},
	} {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, ServerName: tt.serverName})
		if (err == nil) != tt.ok {
			t.Errorf("handshake as %q: err %v, want ok=%v", tt.serverName, err, tt.ok)
		}
		if err != nil {
			continue
		}
		sum := sha256.Sum256(c.ConnectionState().PeerCertificates[0].Raw)
		if got := hex.EncodeToString(sum[:]); got != pin {
			t.Errorf("pin %s, want the SHA-256 of the served certificate %s", pin, got)
		}
		c.Close()
	}
}
