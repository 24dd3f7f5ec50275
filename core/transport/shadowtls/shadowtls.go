// Package shadowtls is the client of ShadowTLS (v3: ihciah/shadow-tls
// docs/protocol-v3-en.md; the older v1 and v2 in v2.go), a TCP layer that
// borrows a real site's TLS 1.3
// handshake: the client shakes hands with the site through the ShadowTLS
// server, then both switch to their own framing on the same connection,
// carrying an inner protocol (Shadowsocks) that does the encryption.
//
// v3's handshake (Client.Handshake):
//   - the ClientHello (uTLS, a browser's) carries a 32-byte session id of
//     28 random bytes and HMAC-SHA1(password, ClientHello with those last
//     4 bytes zero)[:4], by which the server knows the client; anyone else
//     is relayed to the site untouched;
//   - the server rewrites every ApplicationData record the site sends:
//     data XOR SHA256(password | ServerRandom), prefixed with 4 bytes of
//     a running HMAC-SHA1(password) seeded with ServerRandom. The client
//     checks and undoes that before its TLS stack sees the record; a
//     record that fails means the site itself answered (a wrong password,
//     or someone in the path), and the connection is refused once the
//     handshake is done, before any byte of the flow is sent.
//
// After it, each record is header(5) | tag(4) | data, the tag the first 4
// bytes of a running HMAC-SHA1(password) seeded with ServerRandom+"C"
// (client to server) or +"S" (server to client), over the data and then
// fed the tag itself. Records of the site still in flight (session
// tickets) carry the handshake's tag and are dropped.
//
// The site's certificate is verified unless the node says not to; it
// protects nothing (the inner protocol does), but a browser would stop at
// a bad one too.
package shadowtls

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"time"

	utls "github.com/refraction-networking/utls"

	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// Wire constants.
const (
	recordHeader = 5 // type, version (2), length (2)
	tagSize      = 4
	randomSize   = 32
	sessionIDLen = 32

	typeChangeCipherSpec = 20
	typeAlert            = 21
	typeHandshake        = 22
	typeApplicationData  = 23

	handshakeServerHello = 2

	// sessionIDAt is where a ClientHello message carries its session id:
	// type (1), length (3), version (2), random (32), id length (1).
	sessionIDAt = 1 + 3 + 2 + randomSize + 1

	// maxData is the most data one record carries: with its tag, a
	// TLS record's 2^14 bytes of plaintext.
	maxData = 1<<14 - tagSize
)

// ErrNotShadowTLS is returned (wrapped) when the server did not prove the
// password in the handshake: a wrong password, a server that is not
// ShadowTLS v3, or someone in the path answering with the site itself.
var ErrNotShadowTLS = errors.New("the server did not prove the ShadowTLS password (wrong password, not a ShadowTLS v3 server, or the site itself answered)")

// Config is a ShadowTLS client's settings.
type Config struct {
	// Version is the protocol's: 1, 2 or 3; 0 is 3.
	Version     int
	Password    string // not used by version 1
	ServerName  string // SNI of the site whose handshake is borrowed
	Fingerprint string // uTLS ClientHello ("chrome", …); empty: chrome
	// ALPN replaces the fingerprint's ALPN list; empty: the browser's.
	ALPN     []string
	Insecure bool // do not verify the site's certificate's chain
	// PinSHA256 is the SHA-256 of the site's leaf certificate, checked
	// even when Insecure (tlsconf's rule for node.TLS.PinSHA256); nil: none.
	PinSHA256 []byte
	// RootCAs verifies the site's certificate; nil: the system's roots.
	RootCAs *x509.CertPool
}

// Client runs ShadowTLS handshakes. It is safe for concurrent use.
type Client struct {
	version  int
	password []byte
	alpn     []string
	fp       *tlsconf.Fingerprint
	ucfg     *utls.Config
}

// New checks cfg and returns its client.
func New(cfg Config) (*Client, error) {
	version := cfg.Version
	if version == 0 {
		version = 3
	}
	if version < 1 || version > 3 {
		return nil, fmt.Errorf("shadowtls: version %d: want 1, 2 or 3", version)
	}
	if cfg.Password == "" && version != 1 {
		return nil, errors.New("shadowtls: password: empty")
	}
	if cfg.ServerName == "" {
		return nil, errors.New("shadowtls: host: empty (the site whose handshake is borrowed)")
	}
	name := cfg.Fingerprint
	if name == "" {
		name = "chrome" // uTLS is needed to sign the session id; the field's clients default to Chrome
	}
	fp, err := tlsconf.ParseFingerprint(name)
	if err != nil {
		return nil, fmt.Errorf("shadowtls: %w", err)
	}
	c := &Client{version: version, password: []byte(cfg.Password), alpn: cfg.ALPN, fp: fp, ucfg: &utls.Config{
		ServerName:         cfg.ServerName,
		InsecureSkipVerify: cfg.Insecure,
		RootCAs:            cfg.RootCAs,
		// A resumed handshake would carry a PSK binder over the hello,
		// which the session id's HMAC then breaks; none is offered (nor
		// by v1 and v2, whose server hands the site a fresh handshake).
		SessionTicketsDisabled: true,
	}}
	if version == 3 {
		c.ucfg.MinVersion = utls.VersionTLS13 // v3 needs the site's TLS 1.3
	}
	if pin := cfg.PinSHA256; pin != nil {
		name := cfg.ServerName
		c.ucfg.VerifyConnection = func(cs utls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("shadowtls: %s: no certificate: %w", name, tlsconf.ErrPinMismatch)
			}
			if sum := sha256.Sum256(cs.PeerCertificates[0].Raw); !bytes.Equal(sum[:], pin) {
				return fmt.Errorf("shadowtls: %s: %w", name, tlsconf.ErrPinMismatch)
			}
			return nil
		}
	}
	return c, nil
}

// Handshake runs the borrowed handshake over raw, bounded by ctx, and
// returns the connection in ShadowTLS framing. On error the caller closes
// raw.
func (c *Client) Handshake(ctx context.Context, raw net.Conn) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
		defer raw.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if c.version != 3 {
		return c.handshakeV1V2(ctx, raw)
	}

	hs := &handshakeConn{Conn: raw, password: c.password}
	uc, err := c.fp.UClient(hs, c.ucfg.Clone(), c.alpn)
	if err != nil {
		return nil, fmt.Errorf("shadowtls: %w", err)
	}
	if err := c.signHello(uc); err != nil {
		return nil, err
	}
	if err := uc.HandshakeContext(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("shadowtls: handshake with %s: %w", c.ucfg.ServerName, ctx.Err())
		}
		return nil, fmt.Errorf("shadowtls: handshake with %s: %w", c.ucfg.ServerName, err)
	}
	if uc.ConnectionState().Version != utls.VersionTLS13 {
		return nil, fmt.Errorf("shadowtls: %s did not speak TLS 1.3, which v3 needs", c.ucfg.ServerName)
	}
	if hs.random == nil || !hs.proven || hs.forged {
		return nil, fmt.Errorf("shadowtls: %w", ErrNotShadowTLS)
	}
	return newConn(raw, c.password, hs.random, hs.sr), nil
}

// signHello builds uc's ClientHello and writes the signed session id into
// it.
func (c *Client) signHello(uc *utls.UConn) error {
	if err := uc.BuildHandshakeState(); err != nil {
		return fmt.Errorf("shadowtls: build ClientHello: %w", err)
	}
	hello := uc.HandshakeState.Hello
	raw := hello.Raw
	if len(raw) < sessionIDAt+sessionIDLen || raw[sessionIDAt-1] != sessionIDLen {
		return errors.New("shadowtls: the fingerprint's ClientHello has no 32-byte session id")
	}
	sid := raw[sessionIDAt : sessionIDAt+sessionIDLen]
	if _, err := rand.Read(sid[:sessionIDLen-tagSize]); err != nil {
		return err
	}
	clear(sid[sessionIDLen-tagSize:])
	m := hmac.New(sha1.New, c.password)
	m.Write(raw)
	copy(sid[sessionIDLen-tagSize:], m.Sum(nil))
	hello.SessionId = append(hello.SessionId[:0], sid...)
	return nil
}

// newMAC returns HMAC-SHA1(password) fed seed.
func newMAC(password []byte, seed ...[]byte) hash.Hash {
	m := hmac.New(sha1.New, password)
	for _, s := range seed {
		m.Write(s)
	}
	return m
}

// handshakeConn sits under the TLS client during the handshake: it passes
// writes through and hands the TLS client whole records, taking
// ServerRandom from the ServerHello and undoing the server's rewriting of
// the site's ApplicationData records.
type handshakeConn struct {
	net.Conn
	password []byte

	random []byte    // ServerRandom; nil until the ServerHello
	sr     hash.Hash // HMAC seeded with ServerRandom, over the records' data
	key    [sha256.Size]byte
	proven bool // a record carried the server's tag
	forged bool // a record did not

	rec []byte // the record being handed out
	off int
}

// Read hands out the current record, reading the next one when it is
// done; one Read never returns bytes of two records, so the TLS client
// reads no record past the end of its handshake.
func (h *handshakeConn) Read(p []byte) (int, error) {
	if h.off == len(h.rec) {
		rec, err := readRecord(h.Conn, h.rec[:0])
		if err != nil {
			return 0, err
		}
		h.rec, h.off = h.inspect(rec), 0
	}
	n := copy(p, h.rec[h.off:])
	h.off += n
	return n, nil
}

// inspect takes ServerRandom from a ServerHello and unwraps a rewritten
// ApplicationData record, in place.
func (h *handshakeConn) inspect(rec []byte) []byte {
	body := rec[recordHeader:]
	switch rec[0] {
	case typeHandshake:
		if h.random == nil && len(body) >= 6+randomSize && body[0] == handshakeServerHello {
			h.random = append([]byte(nil), body[6:6+randomSize]...)
			h.sr = newMAC(h.password, h.random)
			h.key = sha256.Sum256(append(append([]byte(nil), h.password...), h.random...))
		}
	case typeApplicationData:
		if h.sr == nil || len(body) <= tagSize {
			h.forged = true
			return rec
		}
		h.sr.Write(body[tagSize:])
		if !hmac.Equal(h.sr.Sum(nil)[:tagSize], body[:tagSize]) {
			h.forged = true
			return rec
		}
		data := body[tagSize:]
		for i := range data {
			data[i] ^= h.key[i%len(h.key)]
		}
		h.proven = true
		copy(rec[recordHeader:], data)
		rec = rec[:len(rec)-tagSize]
		putLength(rec, len(data))
	}
	return rec
}

// readRecord reads one record into buf (reused when it is large enough).
func readRecord(r io.Reader, buf []byte) ([]byte, error) {
	buf = grow(buf, recordHeader)
	if _, err := io.ReadFull(r, buf[:recordHeader]); err != nil {
		return nil, err
	}
	n := int(buf[3])<<8 | int(buf[4])
	buf = grow(buf, recordHeader+n)
	if _, err := io.ReadFull(r, buf[recordHeader:recordHeader+n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a header without its body is no clean end
		}
		return nil, err
	}
	return buf[:recordHeader+n], nil
}

// grow returns b resized to n bytes, keeping its contents.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n, max(n, 2*cap(b)))
		copy(nb, b)
		return nb
	}
	return b[:n]
}

func putLength(rec []byte, n int) {
	rec[3], rec[4] = byte(n>>8), byte(n)
}
