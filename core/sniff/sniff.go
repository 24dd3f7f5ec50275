// Package sniff reads the host name a flow is bound for out of its first
// bytes: the SNI of a TLS ClientHello, the Host header of an HTTP/1.x
// request, or the SNI inside a QUIC Initial packet.
//
// The TUN engine sees only addresses. When an app connected to an IP (it
// resolved the name itself, outside Skiff's DNS, or cached an answer), the
// sniffed name lets the router match domain rules and lets the flow reach
// the proxy server as a name.
//
// Every function here takes untrusted bytes: none panics, and each reports
// ErrNeedMore when the bytes so far are a valid beginning that is too short,
// so the caller can read more within a short deadline and try again.
package sniff

import (
	"errors"

	"github.com/skiffvpn/skiff/core/hostname"
)

// Protocol names returned by Sniff.
const (
	ProtoTLS  = "tls"
	ProtoHTTP = "http"
	ProtoQUIC = "quic"
)

// Errors returned by the sniffers. They are sentinels (compare with ==
// or errors.Is) and are returned unwrapped, so sniffing does not allocate
// on failure.
var (
	// ErrNeedMore means the bytes are a valid start of the protocol but
	// end before the host name could be read: read more and call again
	// with all the bytes so far (or, for QUIC, feed the next packet).
	ErrNeedMore = errors.New("sniff: need more data")
	// ErrNoMatch means the bytes are not this protocol (or are malformed).
	ErrNoMatch = errors.New("sniff: not a recognised protocol")
	// ErrNoHost means the protocol was recognised but carries no host
	// name (a ClientHello without SNI, a request without Host).
	ErrNoHost = errors.New("sniff: no host name")
)

// Sniff looks for a host name at the start of a stream (TCP) flow: a TLS
// ClientHello or an HTTP/1.x request. It returns the host (lower case, no
// trailing dot, no port) and ProtoTLS or ProtoHTTP.
//
// err is ErrNeedMore when either protocol could still match with more
// bytes, ErrNoHost when one matched without a name, and ErrNoMatch when
// neither can.
func Sniff(b []byte) (host, proto string, err error) {
	needMore := false
	for _, sn := range streamSniffers {
		host, err = sn.sniff(b)
		switch err {
		case nil:
			return host, sn.proto, nil
		case ErrNoHost:
			return "", sn.proto, err
		case ErrNeedMore:
			needMore = true
		}
	}
	if needMore {
		return "", "", ErrNeedMore
	}
	return "", "", ErrNoMatch
}

// streamSniffers are the protocols Sniff tries, in order.
var streamSniffers = [...]struct {
	proto string
	sniff func([]byte) (string, error)
}{{ProtoTLS, TLS}, {ProtoHTTP, HTTP}}

// cleanHost validates a host name read from the wire and returns it in
// canonical form: lower case, without a trailing dot. It accepts names made
// of letters, digits, '-', '_' and '.', and IP literals (with ':' for IPv6).
// It allocates only the returned string.
func cleanHost(b []byte) (string, bool) {
	if len(b) > 0 && b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > 253 {
		return "", false
	}
	upper := false
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		case c >= 'A' && c <= 'Z':
			upper = true
		default:
			return "", false
		}
	}
	if !upper {
		return string(b), true
	}
	return hostname.Lower(b), true
}
