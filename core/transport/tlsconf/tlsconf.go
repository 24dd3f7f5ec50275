// Package tlsconf turns a node's TLS settings into a crypto/tls client
// configuration, in one place, so that every outbound verifies servers the
// same way: certificates are verified unless the user's own link turned that
// off, and a pinned certificate hash is checked even then.
//
// It also holds Conn, the TLS client connection the stream outbounds relay
// through: crypto/tls with fewer syscalls per byte (see Conn).
package tlsconf

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// ErrPinMismatch is returned (wrapped) by the handshake when the server's
// certificate does not match the pinned SHA-256.
var ErrPinMismatch = errors.New("certificate does not match the pinned SHA-256")

// New returns the client configuration for a server reached as server
// (host name or IP) with settings t (nil: defaults). alpn is used when t
// names none.
//
// Each configuration has its own session cache, so that the outbound's
// later connections resume the TLS session (as browsers do) instead of a
// full handshake each: the server's certificate chain is parsed and
// verified once, not per connection. A pinned certificate is checked on
// resumed connections too (crypto/tls calls VerifyConnection for them).
//
// ECH is refused here (an *node.UnsupportedError): only Stream does it, and
// a protocol that builds its TLS from New must not dial in clear a node
// that asks for it.
func New(t *node.TLS, server string, alpn ...string) (*tls.Config, error) {
	if t != nil && t.ECH != nil {
		return nil, node.Unsupportedf(node.FeatureOption, "ech", "tls: ECH is not supported with this protocol yet; not dialled, to keep the server name hidden")
	}
	return newConfig(t, server, alpn...)
}

// newConfig is New without the ECH check.
func newConfig(t *node.TLS, server string, alpn ...string) (*tls.Config, error) {
	c := &tls.Config{
		ServerName:         server,
		NextProtos:         alpn,
		MinVersion:         tls.VersionTLS12,
		ClientSessionCache: tls.NewLRUClientSessionCache(sessionCacheSize),
	}
	if t == nil {
		return c, nil
	}
	if t.SNI != "" {
		c.ServerName = t.SNI
	}
	if len(t.ALPN) > 0 {
		c.NextProtos = t.ALPN
	}
	if t.Insecure {
		c.InsecureSkipVerify = true
	}
	name := c.ServerName
	if t.PinSHA256 != "" {
		pin, err := ParsePin(t.PinSHA256)
		if err != nil {
			return nil, err
		}
		c.VerifyConnection = func(cs tls.ConnectionState) error { return checkPin(name, cs.PeerCertificates, pin) }
	}
	if t.NoSNI {
		// crypto/tls verifies against the name it sends: with none sent,
		// the chain is verified here, against the same name.
		c.ServerName = ""
		if !c.InsecureSkipVerify {
			c.InsecureSkipVerify = true
			pin := c.VerifyConnection
			c.VerifyConnection = func(cs tls.ConnectionState) error {
				if err := verifyChain(name, cs.PeerCertificates, c.RootCAs); err != nil {
					return err
				}
				if pin != nil {
					return pin(cs)
				}
				return nil
			}
		}
	}
	// An IP literal as ServerName is verified against the certificate's IP
	// SANs; Go sends no SNI for it.
	return c, nil
}

// verifyChain verifies certs (the leaf first) for name against roots (nil:
// the system's), as crypto/tls does when it sends the name itself.
func verifyChain(name string, certs []*x509.Certificate, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return fmt.Errorf("tls: %s: no certificate", name)
	}
	opts := x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

// sessionCacheSize bounds an outbound's session cache, which keeps the
// latest session per server name: one outbound reaches one server, the
// rest is headroom.
const sessionCacheSize = 4

func pinMatches(der, pin []byte) bool {
	sum := sha256.Sum256(der)
	return bytes.Equal(sum[:], pin)
}

// ParsePin parses a certificate SHA-256 written as 64 hex digits, with or
// without colons between byte pairs (both forms appear in share links).
func ParsePin(s string) ([]byte, error) {
	h := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return nil, errors.New("tls: pinSHA256: want 64 hex digits")
	}
	return b, nil
}
