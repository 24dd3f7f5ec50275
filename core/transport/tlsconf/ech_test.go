package tlsconf

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// Names of the ECH tests: the real server, which must never be seen on
// the wire, and the config's public name, which the outer hello carries.
const (
	echSecret = "secret.ech.test"
	echPublic = "public.ech.test"
)

// newECHKey returns a server key for crypto/tls and its ECHConfigList
// (X25519, HKDF-SHA256, AES-128-GCM), as `sing-box generate ech-keypair`
// makes them.
func newECHKey(t testing.TB, publicName string) (tls.EncryptedClientHelloKey, []byte) {
	t.Helper()
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var b cryptobyte.Builder
	b.AddUint16(echVersion)
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint8(7)     // config_id
		b.AddUint16(0x20) // DHKEM(X25519, HKDF-SHA256)
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(k.PublicKey().Bytes()) })
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			b.AddUint16(1) // HKDF-SHA256
			b.AddUint16(1) // AES-128-GCM
		})
		b.AddUint8(0) // maximum_name_length
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(publicName)) })
		b.AddUint16(0) // extensions
	})
	config := b.BytesOrPanic()
	var l cryptobyte.Builder
	l.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(config) })
	return tls.EncryptedClientHelloKey{Config: config, PrivateKey: k.Bytes(), SendAsRetry: true}, l.BytesOrPanic()
}

// recorder keeps what the client sent on a server's connection.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	got bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.got.Write(p[:n])
	r.mu.Unlock()
	return n, err
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.got.Bytes())
}

// echServer is a TLS 1.3 server with a certificate for echSecret and
// echPublic, with ECH keys (keys nil: none), which echoes. It returns the
// address and, per accepted connection, a recorder of the client's bytes.
func echServer(t *testing.T, keys []tls.EncryptedClientHelloKey) (string, string, <-chan *recorder) {
	t.Helper()
	cert, pin := nettest.SelfSigned(t, echSecret)
	pub, _ := nettest.SelfSigned(t, echPublic)
	cfg := &tls.Config{
		MinVersion:               tls.VersionTLS13,
		EncryptedClientHelloKeys: keys,
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if h.ServerName == echPublic {
				return &pub, nil
			}
			return &cert, nil
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan *recorder, 16)
	nettest.Serve(t, ln, func(c net.Conn) {
		r := &recorder{Conn: c}
		conns <- r
		tc := tls.Server(r, cfg)
		if err := tc.Handshake(); err != nil {
			return
		}
		io.Copy(tc, tc)
	})
	return ln.Addr().String(), pin, conns
}

// sniOf returns the server_name of the ClientHello at the start of b.
func sniOf(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) < 9 || b[0] != 22 || b[5] != 1 {
		t.Fatalf("not a ClientHello: % x", b[:min(len(b), 9)])
	}
	s := cryptobyte.String(b[9:])
	var sid, suites, comp, exts cryptobyte.String
	if !s.Skip(2+32) || !s.ReadUint8LengthPrefixed(&sid) || !s.ReadUint16LengthPrefixed(&suites) ||
		!s.ReadUint8LengthPrefixed(&comp) || !s.ReadUint16LengthPrefixed(&exts) {
		t.Fatal("malformed ClientHello")
	}
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			t.Fatal("malformed extensions")
		}
		if typ != 0 {
			continue
		}
		var list, name cryptobyte.String
		var kind uint8
		if !data.ReadUint16LengthPrefixed(&list) || !list.ReadUint8(&kind) || !list.ReadUint16LengthPrefixed(&name) {
			t.Fatal("malformed server_name")
		}
		return string(name)
	}
	return ""
}

func dialStream(t *testing.T, s *Stream, addr string) (*Conn, error) {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := s.Client(ctx, raw)
	if err != nil {
		raw.Close()
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

// TestECHHidesServerName is the attack: an observer of the connection
// reads the ClientHello. With ECH set, it names only the public name, and
// the real name appears nowhere in what the client sent, with Go's hello
// and with each browser fingerprint that carries ECH; the server still
// sees the real name (it chose the real name's certificate) and the
// connection carries data. (Before ECH was implemented, the link's ech=
// was dropped and the hello named echSecret in clear.)
func TestECHHidesServerName(t *testing.T) {
	key, list := newECHKey(t, echPublic)
	addr, pin, conns := echServer(t, []tls.EncryptedClientHelloKey{key})
	for _, fp := range []string{"", "chrome", "firefox"} {
		t.Run("fp="+fp, func(t *testing.T) {
			s, err := NewStream(&node.TLS{SNI: echSecret, Insecure: true, PinSHA256: pin, Fingerprint: fp, ECH: &node.ECH{Config: list}}, "127.0.0.1", "http/1.1")
			if err != nil {
				t.Fatal(err)
			}
			c, err := dialStream(t, s, addr)
			if err != nil {
				t.Fatal(err)
			}
			if !c.ConnectionState().ECHAccepted {
				t.Fatal("ECH not accepted")
			}
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
				t.Fatalf("echo %q, %v", buf, err)
			}
			sent := (<-conns).bytes()
			if got := sniOf(t, sent); got != echPublic {
				t.Errorf("outer SNI %q, want the public name %q", got, echPublic)
			}
			if bytes.Contains(sent, []byte(echSecret)) {
				t.Errorf("the real name %q is in the bytes sent", echSecret)
			}
		})
	}
}

// TestECHNoServerName: without ECH the same capture does show the real
// name, so the test above would see a leak.
func TestECHCaptureSeesLeak(t *testing.T) {
	addr, pin, conns := echServer(t, nil)
	s, err := NewStream(&node.TLS{SNI: echSecret, Insecure: true, PinSHA256: pin}, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dialStream(t, s, addr); err != nil {
		t.Fatal(err)
	}
	if got := sniOf(t, (<-conns).bytes()); got != echSecret {
		t.Fatalf("SNI %q, want %q", got, echSecret)
	}
}

// TestECHRejected: a server without the ECH key (or without ECH at all)
// answers the outer hello; the client refuses the connection with
// ErrECHRejected rather than going on in clear.
func TestECHRejected(t *testing.T) {
	_, list := newECHKey(t, echPublic)
	other, _ := newECHKey(t, echPublic)
	for name, keys := range map[string][]tls.EncryptedClientHelloKey{"no ECH": nil, "other key": {other}} {
		t.Run(name, func(t *testing.T) {
			addr, pin, _ := echServer(t, keys)
			for _, fp := range []string{"", "chrome"} {
				s, err := NewStream(&node.TLS{SNI: echSecret, Insecure: true, PinSHA256: pin, Fingerprint: fp, ECH: &node.ECH{Config: list}}, "127.0.0.1")
				if err != nil {
					t.Fatal(err)
				}
				_, err = dialStream(t, s, addr)
				// The pin is the real name's certificate; the public name's
				// differs, so a rejection may surface as the pin failing
				// first: either way nothing goes on.
				if !errors.Is(err, ErrECHRejected) && !errors.Is(err, ErrPinMismatch) {
					t.Fatalf("fp=%q: err %v, want ErrECHRejected", fp, err)
				}
			}
		})
	}
	t.Run("insecure", func(t *testing.T) {
		addr, _, _ := echServer(t, nil)
		for _, fp := range []string{"", "chrome"} {
			s, err := NewStream(&node.TLS{SNI: echSecret, Insecure: true, Fingerprint: fp, ECH: &node.ECH{Config: list}}, "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			if _, err = dialStream(t, s, addr); !errors.Is(err, ErrECHRejected) {
				t.Fatalf("fp=%q: err %v, want ErrECHRejected", fp, err)
			}
		}
	})
}

// TestECHRefused: what cannot be honoured is refused when the layer is
// built, as unsupported (greyed) where Skiff lacks it.
func TestECHRefused(t *testing.T) {
	_, list := newECHKey(t, echPublic)
	for _, tt := range []struct {
		name        string
		tls         node.TLS
		unsupported bool
	}{
		{"dns", node.TLS{SNI: echSecret, ECH: &node.ECH{}}, true},
		{"safari", node.TLS{SNI: echSecret, Fingerprint: "safari", ECH: &node.ECH{Config: list}}, true},
		{"edge", node.TLS{SNI: echSecret, Fingerprint: "edge", ECH: &node.ECH{Config: list}}, true},
		{"randomized", node.TLS{SNI: echSecret, Fingerprint: "randomized", ECH: &node.ECH{Config: list}}, true},
		{"reality", node.TLS{SNI: echSecret, Reality: &node.Reality{PublicKey: "SLiGvXEvqLDA-q1J2hrF3UWRq8TA1lGUlsUL1mYbUwk"}, ECH: &node.ECH{Config: list}}, false},
		{"no sni", node.TLS{SNI: echSecret, NoSNI: true, ECH: &node.ECH{Config: list}}, false},
		{"ip", node.TLS{ECH: &node.ECH{Config: list}}, false},
		{"garbage", node.TLS{SNI: echSecret, ECH: &node.ECH{Config: []byte{0, 3, 1, 2, 3}}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewStream(&tt.tls, "127.0.0.1")
			if err == nil {
				t.Fatal("no error")
			}
			var u *node.UnsupportedError
			if errors.As(err, &u) != tt.unsupported {
				t.Fatalf("unsupported %v, want %v: %v", errors.As(err, &u), tt.unsupported, err)
			}
		})
	}
	// New's users (QUIC protocols, plugins) have no ECH: refused too.
	var u *node.UnsupportedError
	if _, err := New(&node.TLS{SNI: echSecret, ECH: &node.ECH{Config: list}}, "127.0.0.1"); !errors.As(err, &u) {
		t.Fatalf("New: %v, want unsupported", err)
	}
}

func TestParseECHConfigList(t *testing.T) {
	_, list := newECHKey(t, echPublic)
	names, err := ParseECHConfigList(list)
	if err != nil || len(names) != 1 || names[0] != echPublic {
		t.Fatalf("%q, %v", names, err)
	}
	// An unknown version is skipped, alone it is an error.
	other := binary.BigEndian.AppendUint16(nil, 6)
	other = append(other, 0xfe, 0x0a, 0, 2, 1, 2)
	if _, err := ParseECHConfigList(other); err == nil {
		t.Error("only an unknown version: no error")
	}
	both := binary.BigEndian.AppendUint16(nil, uint16(len(list)-2+6))
	both = append(both, other[2:]...)
	both = append(both, list[2:]...)
	if names, err := ParseECHConfigList(both); err != nil || len(names) != 1 {
		t.Errorf("with an unknown version first: %q, %v", names, err)
	}
	for i := range list {
		if _, err := ParseECHConfigList(list[:i]); err == nil {
			t.Errorf("truncated at %d: no error", i)
		}
	}
}

func FuzzParseECHConfigList(f *testing.F) {
	_, list := newECHKey(f, echPublic)
	f.Add(list)
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		names, err := ParseECHConfigList(b)
		if err == nil && len(names) == 0 {
			t.Fatal("no error and no config")
		}
	})
}
