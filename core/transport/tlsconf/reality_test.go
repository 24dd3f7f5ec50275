package tlsconf

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/hkdf"

	"github.com/skiffvpn/skiff/core/node"
)

// rawHello dials a listener that reads the first TLS record with s and
// returns the record. The handshake fails (the listener answers nothing).
func rawHello(t *testing.T, s *Stream) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		hdr := make([]byte, 5)
		io.ReadFull(c, hdr)
		rec := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
		io.ReadFull(c, rec)
		got <- append(hdr, rec...)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Client(ctx, raw); err == nil {
		t.Fatal("handshake with a mute listener succeeded")
	}
	return <-got
}

// x25519KeyShare returns the X25519 key share of a ClientHello record.
func x25519KeyShare(t *testing.T, rec []byte) []byte {
	t.Helper()
	b := rec[5+4+2+32:]
	b = b[1+int(b[0]):]                          // session id
	b = b[2+int(binary.BigEndian.Uint16(b)):]    // cipher suites
	b = b[1+int(b[0]):]                          // compression
	b = b[2 : 2+int(binary.BigEndian.Uint16(b))] // extensions
	for len(b) >= 4 {
		typ, l := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		data := b[4 : 4+l]
		b = b[4+l:]
		if typ != 51 {
			continue
		}
		data = data[2:]
		for len(data) >= 4 {
			g, kl := binary.BigEndian.Uint16(data), int(binary.BigEndian.Uint16(data[2:]))
			if g == 29 && kl == 32 {
				return data[4 : 4+kl]
			}
			data = data[4+kl:]
		}
	}
	t.Fatal("no X25519 key share")
	return nil
}

// TestRealitySeal opens the session id of a REALITY ClientHello as a
// server with the private key would, and finds the version, the time and
// the short id; and checks the key share it was sealed with is the one
// sent.
func TestRealitySeal(t *testing.T) {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pbk := base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes())
	for _, fp := range []string{"chrome", "firefox", "safari", "edge"} {
		t.Run(fp, func(t *testing.T) {
			s := mustStream(t, &node.TLS{SNI: "www.example.com", Fingerprint: fp, Reality: &node.Reality{PublicKey: pbk, ShortID: "a1b2"}})
			rec := rawHello(t, s)
			msg := rec[5:]
			random := msg[6:38]
			if msg[38] != 32 {
				t.Fatalf("session id of %d bytes", msg[38])
			}
			sid := append([]byte(nil), msg[39:71]...)
			pub, err := ecdh.X25519().NewPublicKey(x25519KeyShare(t, rec))
			if err != nil {
				t.Fatal(err)
			}
			secret, err := priv.ECDH(pub)
			if err != nil {
				t.Fatal(err)
			}
			key := make([]byte, 32)
			io.ReadFull(hkdf.New(sha256.New, secret, random[:20], []byte("REALITY")), key)
			block, _ := aes.NewCipher(key)
			aead, _ := cipher.NewGCM(block)
			aad := append([]byte(nil), msg...)
			clear(aad[39:71])
			plain, err := aead.Open(nil, random[20:], sid, aad)
			if err != nil {
				t.Fatalf("session id does not open: %v", err)
			}
			if !bytes.Equal(plain[:3], realityVersion[:]) || plain[3] != 0 {
				t.Errorf("version %v", plain[:4])
			}
			if ts := time.Unix(int64(binary.BigEndian.Uint32(plain[4:8])), 0); time.Since(ts).Abs() > time.Minute {
				t.Errorf("time %v", ts)
			}
			if !bytes.Equal(plain[8:], []byte{0xa1, 0xb2, 0, 0, 0, 0, 0, 0}) {
				t.Errorf("short id %x", plain[8:])
			}
		})
	}
}

// realityCert returns a DER certificate for an ed25519 key whose signature
// field is HMAC-SHA512(authKey, the key), as a REALITY server makes it.
func realityCert(t *testing.T, authKey []byte) []byte {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	h := hmac.New(sha512.New, authKey)
	h.Write(pub)
	i := bytes.LastIndex(der, cert.Signature)
	copy(der[i:], h.Sum(nil)) // both 64 bytes
	return der
}

func TestRealityVerify(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	good := realityCert(t, key)
	if !provesKey(good, key) {
		t.Fatal("the server's certificate does not prove the key")
	}
	if provesKey(good, bytes.Repeat([]byte{8}, 32)) {
		t.Fatal("a certificate for another auth key proves ours")
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	ecdsaDER, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ek.PublicKey, ek)
	r := &realityConn{authKey: key}
	for name, der := range map[string][]byte{"ecdsa": ecdsaDER, "garbage": []byte("not a certificate"), "empty": nil} {
		if err := r.verify([][]byte{der}, nil); !errors.Is(err, ErrNotReality) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := r.verify([][]byte{good}, nil); err != nil {
		t.Errorf("good: %v", err)
	}
	if err := (&realityConn{}).verify([][]byte{good}, nil); !errors.Is(err, ErrNotReality) {
		t.Errorf("no auth key: %v", err)
	}
}

func TestRealityConfig(t *testing.T) {
	pbk := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	for _, tc := range []struct {
		name string
		t    *node.TLS
		want string
	}{
		{"ok", &node.TLS{SNI: "a.example", Reality: &node.Reality{PublicKey: pbk, ShortID: "0123456789abcdef"}}, ""},
		{"padded std base64", &node.TLS{SNI: "a.example", Reality: &node.Reality{PublicKey: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))}}, ""},
		{"short key", &node.TLS{SNI: "a.example", Reality: &node.Reality{PublicKey: "abcd"}}, "public key"},
		{"long sid", &node.TLS{SNI: "a.example", Reality: &node.Reality{PublicKey: pbk, ShortID: "0123456789abcdef01"}}, "short id"},
		{"odd sid", &node.TLS{SNI: "a.example", Reality: &node.Reality{PublicKey: pbk, ShortID: "abc"}}, "short id"},
		{"hex sid", &node.TLS{SNI: "a.example", Reality: &node.Reality{PublicKey: pbk, ShortID: "zz"}}, "short id"},
		{"no sni", &node.TLS{Reality: &node.Reality{PublicKey: pbk}}, "sni"},
		{"unknown fp", &node.TLS{SNI: "a.example", Fingerprint: "lynx", Reality: &node.Reality{PublicKey: pbk}}, "unknown TLS fingerprint"},
	} {
		s, err := NewStream(tc.t, "192.0.2.1")
		if tc.want == "" {
			if err != nil || !s.Reality() || s.Fingerprint().Name() != "chrome" && tc.t.Fingerprint == "" {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
