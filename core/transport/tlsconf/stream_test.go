package tlsconf

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"

	utls "github.com/refraction-networking/utls"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// clientHello is what a server reads of a ClientHello: cipher suites and
// extension types in the order sent, and the ALPN protocols offered.
type clientHello struct {
	suites []uint16
	exts   []uint16
	alpn   []string
}

// isGREASE reports an RFC 8701 GREASE value, which browsers pick at random.
func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

// parseClientHello parses the handshake message of a TLS record stream.
func parseClientHello(b []byte) (*clientHello, error) {
	bad := errors.New("malformed ClientHello")
	if len(b) < 5+4 || b[0] != 22 || b[5] != 1 {
		return nil, bad
	}
	b = b[5+4:]
	next := func(n int) []byte {
		if len(b) < n {
			b = nil
			return nil
		}
		p := b[:n]
		b = b[n:]
		return p
	}
	u8 := func() int {
		p := next(1)
		if p == nil {
			return 0
		}
		return int(p[0])
	}
	u16 := func() int {
		p := next(2)
		if p == nil {
			return 0
		}
		return int(binary.BigEndian.Uint16(p))
	}
	var h clientHello
	next(2 + 32)
	next(u8())
	cs := next(u16())
	for i := 0; i+1 < len(cs); i += 2 {
		if v := binary.BigEndian.Uint16(cs[i:]); !isGREASE(v) {
			h.suites = append(h.suites, v)
		}
	}
	next(u8())
	exts := next(u16())
	if b == nil || exts == nil {
		return nil, bad
	}
	b = exts
	for len(b) >= 4 {
		typ := uint16(u16())
		data := next(u16())
		if data == nil {
			return nil, bad
		}
		if typ == 16 && len(data) >= 2 { // ALPN
			l := data[2:]
			for len(l) > 0 && int(l[0]) < len(l) {
				h.alpn = append(h.alpn, string(l[1:1+l[0]]))
				l = l[1+l[0]:]
			}
		}
		if !isGREASE(typ) && typ != 21 { // padding depends on the length
			h.exts = append(h.exts, typ)
		}
	}
	return &h, nil
}

// specHello is what the spec of fingerprint id says the server sees.
func specHello(t *testing.T, id utls.ClientHelloID) *clientHello {
	spec, err := utls.UTLSIdToSpec(id)
	if err != nil {
		t.Fatal(err)
	}
	var h clientHello
	for _, s := range spec.CipherSuites {
		if !isGREASE(s) {
			h.suites = append(h.suites, s)
		}
	}
	for _, e := range spec.Extensions {
		if _, ok := e.(*utls.UtlsPaddingExtension); ok {
			continue
		}
		if _, ok := e.(*utls.UtlsGREASEExtension); ok {
			continue
		}
		if _, ok := e.(*utls.SNIExtension); ok {
			h.exts = append(h.exts, 0) // empty in the spec: the name is the connection's
			continue
		}
		b := make([]byte, e.Len())
		if n, _ := e.Read(b); n < 4 && len(b) < 4 {
			continue
		}
		if typ := binary.BigEndian.Uint16(b); !isGREASE(typ) {
			h.exts = append(h.exts, typ)
		}
	}
	return &h
}

// captureHello dials a listener that reads the first TLS record with s
// and returns what it parsed of the ClientHello.
func captureHello(t *testing.T, s *Stream) *clientHello {
	t.Helper()
	h, err := parseClientHello(rawHello(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sorted(v []uint16) []uint16 { v = slices.Clone(v); slices.Sort(v); return v }

// TestFingerprintHello: the ClientHello a server receives has the cipher
// suites (in order) and the extensions of the chosen browser's spec, and
// offers the transport's ALPN; without fp it is Go's.
func TestFingerprintHello(t *testing.T) {
	goHello := captureHello(t, mustStream(t, &node.TLS{}, "http/1.1"))
	for name, id := range fingerprints {
		if id == utls.HelloRandomized {
			continue
		}
		t.Run(name, func(t *testing.T) {
			s := mustStream(t, &node.TLS{Fingerprint: name}, "http/1.1")
			got := captureHello(t, s)
			want := specHello(t, id)
			if !slices.Equal(got.suites, want.suites) {
				t.Errorf("cipher suites %x, want %x", got.suites, want.suites)
			}
			// Chrome shuffles its extensions per connection: compare as
			// sets; the others send them in their order.
			if name == "chrome" && !slices.Equal(sorted(got.exts), sorted(want.exts)) || name != "chrome" && !slices.Equal(got.exts, want.exts) {
				t.Errorf("extensions %v, want %v", got.exts, want.exts)
			}
			if slices.Contains(want.exts, 16) && !slices.Equal(got.alpn, []string{"http/1.1"}) {
				t.Errorf("ALPN %q, want the transport's [http/1.1]", got.alpn)
			}
			if slices.Equal(got.suites, goHello.suites) && slices.Equal(got.exts, goHello.exts) {
				t.Error("the ClientHello is Go's own")
			}
		})
	}
	t.Run("randomized", func(t *testing.T) {
		got := captureHello(t, mustStream(t, &node.TLS{Fingerprint: "randomized"}, "h2"))
		if !slices.Equal(got.alpn, []string{"h2"}) {
			t.Errorf("ALPN %q, want [h2]", got.alpn)
		}
		if slices.Equal(got.suites, goHello.suites) && slices.Equal(got.exts, goHello.exts) {
			t.Error("the ClientHello is Go's own")
		}
	})
	t.Run("none", func(t *testing.T) {
		if !slices.Equal(goHello.alpn, []string{"http/1.1"}) {
			t.Errorf("Go's ALPN %q", goHello.alpn)
		}
	})
}

func mustStream(t *testing.T, tt *node.TLS, alpn ...string) *Stream {
	t.Helper()
	s, err := NewStream(tt, "tlsconf.test", alpn...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseFingerprint(t *testing.T) {
	for _, name := range []string{"chrome", "Firefox", "safari", "ios", "edge", "random", "randomized"} {
		f, err := ParseFingerprint(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == "random" && !slices.Contains(random, f.Name()) {
			t.Errorf("random chose %q", f.Name())
		}
	}
	_, err := ParseFingerprint("netscape")
	if !errors.Is(err, ErrUnknownFingerprint) || !strings.Contains(err.Error(), `"netscape"`) {
		t.Errorf("unknown fp: %v", err)
	}
	if _, err := NewStream(&node.TLS{Fingerprint: "netscape"}, "a"); !errors.Is(err, ErrUnknownFingerprint) {
		t.Errorf("NewStream with unknown fp: %v", err)
	}
}

// TestFingerprintTraffic: every fingerprint completes a handshake with a
// Go TLS server, verifies its certificate as crypto/tls does (a wrong
// name, a pin), negotiates the transport's ALPN, and carries data both
// ways through Conn.
func TestFingerprintTraffic(t *testing.T) {
	cert, pin := nettest.SelfSigned(t, "tlsconf.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	nettest.Serve(t, ln, func(c net.Conn) { io.Copy(c, c) })
	dial := func(tt *node.TLS, alpn ...string) (*Conn, error) {
		s, err := NewStream(tt, "tlsconf.test", alpn...)
		if err != nil {
			return nil, err
		}
		return dialStream(t, s, ln.Addr().String())
	}
	for _, fp := range []string{"", "chrome", "firefox", "safari", "ios", "edge", "random", "randomized"} {
		t.Run("fp="+fp, func(t *testing.T) {
			if _, err := dial(&node.TLS{Fingerprint: fp}, "http/1.1"); err == nil {
				t.Fatal("an unverifiable certificate was accepted")
			}
			if _, err := dial(&node.TLS{Fingerprint: fp, Insecure: true, PinSHA256: strings.Repeat("00", 32)}, "http/1.1"); !errors.Is(err, ErrPinMismatch) {
				t.Fatalf("wrong pin: %v", err)
			}
			c, err := dial(&node.TLS{Fingerprint: fp, Insecure: true, PinSHA256: pin}, "http/1.1")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
				t.Errorf("ALPN %q, want http/1.1", p)
			}
			if uc, ok := c.engine.(*uconn); ok {
				if hs := uc.HandshakeState; hs.Hello != nil || hs.ServerHello != nil || hs.State13.KeyShareKeys != nil ||
					hs.State13.TrafficSecret != nil || hs.MasterSecret != nil || uc.Extensions != nil {
					t.Error("the finished handshake's state is still held")
				}
			} else if fp != "" {
				t.Fatalf("fp=%s: engine %T, want uTLS", fp, c.engine)
			}
			msg := bytes.Repeat([]byte("fingerprint "), 20000) // several records, batched writes
			go c.Write(msg)
			back := make([]byte, len(msg))
			if _, err := io.ReadFull(c, back); err != nil || !bytes.Equal(back, msg) {
				t.Fatalf("echo: %v", err)
			}
			h2, err := dial(&node.TLS{Fingerprint: fp, Insecure: true}, "h2")
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Close()
			if p := h2.ConnectionState().NegotiatedProtocol; p != "h2" {
				t.Errorf("ALPN %q, want h2", p)
			}
		})
	}
}

// TestRandomizedNeedsNoRetry rolls many randomized hellos: each one sends a
// key share for the group a Go server would pick from its list, so that no
// handshake depends on a HelloRetryRequest.
func TestRandomizedNeedsNoRetry(t *testing.T) {
	cfg := &utls.Config{ServerName: "example.com"}
	for i := 0; i < 200; i++ {
		a, b := net.Pipe()
		uc, err := newUClient(a, cfg, utls.HelloRandomizedNoALPN, nil)
		a.Close()
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		ok, err := fixRandomized(uc)
		if err != nil || !ok {
			t.Fatalf("hello %d needs a retry request (ok %v, err %v)", i, ok, err)
		}
	}
}
