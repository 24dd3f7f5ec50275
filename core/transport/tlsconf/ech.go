package tlsconf

import (
	"encoding/binary"
	"errors"
	"fmt"

	utls "github.com/refraction-networking/utls"

	"github.com/skiffvpn/skiff/core/node"
)

// Encrypted Client Hello. With a node's ECH set, the ClientHello the
// network sees names the config's public name; the real one (SNI) is in
// the encrypted inner hello. There is no way back to clear: crypto/tls
// (and uTLS) fail a handshake whose server did not accept ECH, and Client
// checks ECHAccepted again after it. A node whose ECH cannot be honoured
// here (a config only in DNS, REALITY, no SNI, a fingerprint without an ECH
// extension) is refused with an *node.UnsupportedError, so that it is
// greyed, never dialled without ECH.

// ErrECHRejected is returned (wrapped) when the server did not accept ECH:
// the connection is refused rather than continued with the name in clear.
var ErrECHRejected = errors.New("the server rejected ECH (nothing was sent; the real server name stays hidden)")

// echVersion is the ECHConfig version of RFC 9849 (draft-ietf-tls-esni-18
// onward), the only one crypto/tls and uTLS take.
const echVersion = 0xfe0d

// ParseECHConfigList checks that b is an ECHConfigList with at least one
// config of the version crypto/tls speaks, and returns the public names of
// those configs. It reads only the framing and the public name; crypto/tls
// parses the rest at the handshake.
func ParseECHConfigList(b []byte) ([]string, error) {
	bad := func(what string) error { return fmt.Errorf("ech: config list: %s", what) }
	if len(b) < 2 {
		return nil, bad("too short")
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n != len(b) {
		return nil, bad("length does not match")
	}
	var names []string
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, bad("truncated config")
		}
		ver, l := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		b = b[4:]
		if l > len(b) {
			return nil, bad("truncated config")
		}
		c := b[:l]
		b = b[l:]
		if ver != echVersion {
			continue // another version: skipped, as RFC 9849 says
		}
		name, err := echPublicName(c)
		if err != nil {
			return nil, bad(err.Error())
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, bad(fmt.Sprintf("no config of version %#x", echVersion))
	}
	return names, nil
}

// echPublicName reads the public name of an ECHConfigContents:
// key_config (config_id u8, kem_id u16, public_key <1..2^16-1>,
// cipher_suites <4..2^16-4>), maximum_name_length u8, public_name
// <1..255>, extensions <0..2^16-1>.
func echPublicName(c []byte) (string, error) {
	skip16 := func() bool {
		if len(c) < 2 || int(binary.BigEndian.Uint16(c))+2 > len(c) {
			return false
		}
		c = c[2+int(binary.BigEndian.Uint16(c)):]
		return true
	}
	if len(c) < 3 {
		return "", errors.New("truncated key config")
	}
	c = c[3:] // config_id, kem_id
	if !skip16() || !skip16() {
		return "", errors.New("truncated key config")
	}
	if len(c) < 2 || int(c[1]) == 0 || 2+int(c[1]) > len(c) {
		return "", errors.New("bad public name")
	}
	name := string(c[2 : 2+c[1]])
	c = c[2+c[1]:]
	if !skip16() || len(c) != 0 {
		return "", errors.New("bad extensions")
	}
	return name, nil
}

// echConfig returns the ECHConfigList to use for t (nil without ECH), or
// an *node.UnsupportedError for what Skiff cannot honour.
func echConfig(t *node.TLS) ([]byte, error) {
	if t == nil || t.ECH == nil {
		return nil, nil
	}
	e := t.ECH
	switch {
	case len(e.Config) == 0:
		return nil, node.Unsupportedf(node.FeatureOption, "ech (DNS)", "tls: ECH with its config in DNS HTTPS records is not supported yet (the link must carry the ECHConfigList); not dialled, to keep the server name hidden")
	case t.Reality != nil:
		return nil, errors.New("tls: REALITY cannot go with ECH")
	case t.NoSNI:
		return nil, errors.New("tls: ECH needs a server name (disable_sni is set)")
	}
	if _, err := ParseECHConfigList(e.Config); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return e.Config, nil
}

// echSpecOK reports whether a uTLS ClientHello spec has an extension uTLS
// can turn into a real ECH one (the browsers' GREASE ECH); uTLS fails the
// handshake without one.
func echSpecOK(spec *utls.ClientHelloSpec) bool {
	if spec == nil {
		return false
	}
	for _, e := range spec.Extensions {
		if _, ok := e.(utls.EncryptedClientHelloExtension); ok {
			return true
		}
	}
	return false
}
