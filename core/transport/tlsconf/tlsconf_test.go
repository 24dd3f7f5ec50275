package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/internal/nettest"
)

func TestNew(t *testing.T) {
	pin := strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		tls      *node.TLS
		server   string
		wantSNI  string
		wantALPN string
		insecure bool
		pinned   bool
		wantErr  bool
	}{
		{name: "defaults", server: "example.com", wantSNI: "example.com", wantALPN: "h3"},
		{name: "sni and alpn", tls: &node.TLS{SNI: "cdn.example", ALPN: []string{"http/1.1"}}, server: "1.2.3.4", wantSNI: "cdn.example", wantALPN: "http/1.1"},
		{name: "insecure only when asked", tls: &node.TLS{Insecure: true}, server: "a", wantSNI: "a", wantALPN: "h3", insecure: true},
		{name: "pin", tls: &node.TLS{PinSHA256: pin}, server: "a", wantSNI: "a", wantALPN: "h3", pinned: true},
		{name: "pin with colons", tls: &node.TLS{PinSHA256: strings.Repeat("AB:", 31) + "AB"}, server: "a", wantSNI: "a", wantALPN: "h3", pinned: true},
		{name: "bad pin", tls: &node.TLS{PinSHA256: "xyz"}, server: "a", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.tls, tt.server, "h3")
			if tt.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ServerName != tt.wantSNI || c.NextProtos[0] != tt.wantALPN || c.InsecureSkipVerify != tt.insecure || (c.VerifyConnection != nil) != tt.pinned {
				t.Errorf("got sni=%q alpn=%v insecure=%v pinned=%v", c.ServerName, c.NextProtos, c.InsecureSkipVerify, c.VerifyConnection != nil)
			}
		})
	}
}

// TestNewResumes: a configuration's later connections resume the TLS
// session, and a pinned certificate is checked on the resumed ones too.
func TestNewResumes(t *testing.T) {
	cert, pin := nettest.SelfSigned(t, "tlsconf.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	nettest.Serve(t, ln, func(c net.Conn) { c.Write([]byte("ok")) }) // after the handshake and its tickets
	cfg, err := New(&node.TLS{Insecure: true, PinSHA256: pin}, "tlsconf.test")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	verify := cfg.VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		checked++
		return verify(cs)
	}
	for i, wantResumed := range []bool{false, true, true} {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		b, err := io.ReadAll(c) // takes in the session tickets
		c.Close()
		if string(b) != "ok" {
			t.Fatalf("connection %d: read %q, %v", i, b, err)
		}
		if got := c.ConnectionState().DidResume; got != wantResumed {
			t.Errorf("connection %d: resumed = %v, want %v", i, got, wantResumed)
		}
		if checked != i+1 {
			t.Errorf("connection %d: pin checked %d times in all, want %d", i, checked, i+1)
		}
	}
}

// TestNoSNI checks that NoSNI sends no server name and still verifies the
// chain against the name (and the pin), refusing a certificate for
// another name or one that does not chain to the roots.
func TestNoSNI(t *testing.T) {
	cert, pin := nettest.SelfSigned(t, "tlsconf.test")
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	sawSNI := make(chan string, 8)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sawSNI <- h.ServerName
		return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.(*tls.Conn).Handshake()
				c.Write([]byte("ok"))
			}()
		}
	}()
	tests := []struct {
		name   string
		server string
		tls    node.TLS
		roots  *x509.CertPool
		ok     bool
	}{
		{"verified", "tlsconf.test", node.TLS{NoSNI: true}, roots, true},
		{"sni field names it", "127.0.0.1", node.TLS{NoSNI: true, SNI: "tlsconf.test"}, roots, true},
		{"pinned", "tlsconf.test", node.TLS{NoSNI: true, PinSHA256: pin}, roots, true},
		{"wrong pin", "tlsconf.test", node.TLS{NoSNI: true, PinSHA256: strings.Repeat("ab", 32)}, roots, false},
		{"other name", "other.test", node.TLS{NoSNI: true}, roots, false},
		{"untrusted", "tlsconf.test", node.TLS{NoSNI: true}, x509.NewCertPool(), false},
		{"insecure", "other.test", node.TLS{NoSNI: true, Insecure: true}, x509.NewCertPool(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := New(&tt.tls, tt.server)
			if err != nil {
				t.Fatal(err)
			}
			cfg.RootCAs = tt.roots
			c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
			if sni := <-sawSNI; sni != "" {
				t.Errorf("server saw SNI %q", sni)
			}
			if err == nil {
				c.Close()
			}
			if (err == nil) != tt.ok {
				t.Fatalf("handshake: %v, want ok %v", err, tt.ok)
			}
		})
	}
	if _, err := NewStream(&node.TLS{NoSNI: true, Fingerprint: "chrome"}, "tlsconf.test"); err == nil {
		t.Error("disable_sni with a fingerprint accepted")
	}
}
