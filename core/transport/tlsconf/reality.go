package tlsconf

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	utls "github.com/refraction-networking/utls"
	"golang.org/x/crypto/hkdf"

	"github.com/skiffvpn/skiff/core/node"
)

// REALITY, client side. The server holds an X25519 key pair whose public
// half (pbk) is in the link, and a set of short ids. The client sends an
// ordinary-looking TLS 1.3 ClientHello (uTLS) to the server, naming a real
// site as SNI, and hides its credentials in the 32-byte legacy session id:
//
//	auth key  = HKDF-SHA256(secret: X25519(client key share, pbk),
//	                        salt: ClientHello.random[:20], info: "REALITY")
//	plaintext = client version (3 bytes) | 0 | unix time (u32, big-endian) | short id (8 bytes)
//	session id = AES-256-GCM(auth key, nonce: ClientHello.random[20:],
//	                         plaintext, additional data: the ClientHello with a zero session id)
//
// A server that can open the session id answers the handshake itself,
// with a fresh ed25519 certificate whose signature field is
// HMAC-SHA512(auth key, the certificate's public key): only the holder of
// the private key can compute the auth key, so that certificate proves the
// server. Any other server (the real site, to which a REALITY server
// passes clients it does not recognise, or a plain TLS server) sends some
// other certificate, and the client refuses it in the handshake, before any
// proxied byte is written. Field clients then browse the real site for a
// while (spiderX) to look like a browser; Skiff only closes.

// ErrNotReality is returned (wrapped) when the server did not prove the
// REALITY key: a wrong public key or short id, or not a REALITY server.
var ErrNotReality = errors.New("the server did not prove the REALITY key (wrong public key or short id, or not a REALITY server); refused before sending anything")

// realityVersion is the client version the session id carries. Servers
// may refuse clients older than a minimum they set; this is a current
// one.
var realityVersion = [3]byte{25, 10, 15}

// realityKey is a node's REALITY settings, parsed.
type realityKey struct {
	pub     *ecdh.PublicKey
	shortID [8]byte
	spiderX string // kept for the link; Skiff does not browse (see above)
}

func newRealityKey(r *node.Reality) (*realityKey, error) {
	k := strings.NewReplacer("+", "-", "/", "_").Replace(strings.TrimRight(r.PublicKey, "="))
	b, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil || len(b) != 32 {
		return nil, errors.New("reality: public key: want 32 bytes of base64url")
	}
	pub, err := ecdh.X25519().NewPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("reality: public key: %w", err)
	}
	rk := &realityKey{pub: pub, spiderX: r.SpiderX}
	if len(r.ShortID) > 16 || len(r.ShortID)%2 != 0 {
		return nil, errors.New("reality: short id: want an even number of hex digits, at most 16")
	}
	if _, err := hex.Decode(rk.shortID[:], []byte(r.ShortID)); err != nil {
		return nil, errors.New("reality: short id: want an even number of hex digits, at most 16")
	}
	return rk, nil
}

// realityConn is one REALITY handshake's state.
type realityConn struct {
	key     *realityKey
	authKey []byte
	refused error // set when verify refused the server
}

// sessionIDAt is where a ClientHello message carries its session id: type
// (1), length (3), version (2), random (32), session id length (1).
const sessionIDAt = 39

// seal builds uc's ClientHello and writes the sealed credentials into its
// session id.
func (r *realityConn) seal(uc *utls.UConn) error {
	if err := uc.BuildHandshakeState(); err != nil {
		return fmt.Errorf("reality: build ClientHello: %w", err)
	}
	hello := uc.HandshakeState.Hello
	if len(hello.Raw) < sessionIDAt+32 || hello.Raw[sessionIDAt-1] != 32 || len(hello.Random) != 32 {
		return errors.New("reality: the fingerprint's ClientHello has no 32-byte session id")
	}
	priv := x25519Share(uc.HandshakeState.State13.KeyShareKeys)
	if priv == nil {
		return errors.New("reality: the fingerprint's ClientHello has no X25519 key share")
	}
	secret, err := priv.ECDH(r.key.pub)
	if err != nil {
		return fmt.Errorf("reality: X25519: %w", err)
	}
	r.authKey = make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, hello.Random[:20], []byte("REALITY")), r.authKey); err != nil {
		return fmt.Errorf("reality: hkdf: %w", err)
	}
	var plain [16]byte
	copy(plain[:3], realityVersion[:])
	binary.BigEndian.PutUint32(plain[4:8], uint32(time.Now().Unix()))
	copy(plain[8:], r.key.shortID[:])

	sid := hello.Raw[sessionIDAt : sessionIDAt+32]
	clear(sid) // the additional data has a zero session id
	block, err := aes.NewCipher(r.authKey)
	if err != nil {
		return err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return err
	}
	sealed := aead.Seal(nil, hello.Random[20:], plain[:], hello.Raw)
	copy(sid, sealed)
	hello.SessionId = append(hello.SessionId[:0], sealed...)
	return nil
}

// x25519Share returns the private key of the ClientHello's X25519 key
// share: the plain X25519 share when there is one, else the X25519 half of
// the hybrid X25519MLKEM768 share.
func x25519Share(k *utls.KeySharePrivateKeys) *ecdh.PrivateKey {
	if k == nil {
		return nil
	}
	if k.Ecdhe != nil && k.Ecdhe.Curve() == ecdh.X25519() {
		return k.Ecdhe
	}
	return k.MlkemEcdhe
}

// verify accepts only the certificate that proves the server knows the
// auth key (see above).
func (r *realityConn) verify(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	if r.authKey != nil && len(rawCerts) > 0 && provesKey(rawCerts[0], r.authKey) {
		return nil
	}
	r.refused = fmt.Errorf("reality: %w", ErrNotReality)
	return r.refused
}

// provesKey reports whether the DER certificate is an ed25519 one whose
// signature is HMAC-SHA512(authKey, its public key).
func provesKey(der, authKey []byte) bool {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return false
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return false
	}
	h := hmac.New(sha512.New, authKey)
	h.Write(pub)
	return bytes.Equal(h.Sum(nil), cert.Signature)
}
