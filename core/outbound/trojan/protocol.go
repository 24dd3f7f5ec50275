package trojan

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/eof"
)

// Commands of a Trojan request (trojan-gfw docs/protocol.md).
const (
	cmdConnect      byte = 1
	cmdUDPAssociate byte = 3
)

// Address types, as in SOCKS5.
const (
	atypIPv4   byte = 1
	atypDomain byte = 3
	atypIPv6   byte = 4
)

// keyLen is the length of the password's hex SHA-224.
const keyLen = 56

// maxPacket is the largest datagram a UDP frame carries (u16 length).
const maxPacket = 0xffff

// key returns hex(SHA-224(password)), lower case, as the request carries it.
func key(password string) [keyLen]byte {
	sum := sha256.Sum224([]byte(password))
	var k [keyLen]byte
	hex.Encode(k[:], sum[:])
	return k
}

// appendRequest appends a Trojan request header: the key, CRLF, the
// command, the destination (SOCKS5 form) and CRLF.
func appendRequest(b []byte, k *[keyLen]byte, cmd byte, dst flow.Addr) ([]byte, error) {
	b = append(b, k[:]...)
	b = append(b, '\r', '\n', cmd)
	b, err := appendAddr(b, dst)
	if err != nil {
		return nil, err
	}
	return append(b, '\r', '\n'), nil
}

// atypes are Trojan's address types (SOCKS5's).
var atypes = flow.AddrTypes{IPv4: atypIPv4, Name: atypDomain, IPv6: atypIPv6}

// appendAddr appends dst as ATYP, address, port (big-endian).
func appendAddr(b []byte, dst flow.Addr) ([]byte, error) {
	b, err := dst.AppendHost(b, atypes)
	if err != nil {
		return nil, fmt.Errorf("trojan: %w", err)
	}
	return binary.BigEndian.AppendUint16(b, dst.Port), nil
}

// appendPacket appends one UDP frame: the address, the payload's length
// (u16), CRLF and the payload.
func appendPacket(b []byte, dst flow.Addr, p []byte) ([]byte, error) {
	if len(p) > maxPacket {
		return nil, fmt.Errorf("trojan: datagram of %d bytes, at most %d", len(p), maxPacket)
	}
	b, err := appendAddr(b, dst)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	b = append(b, '\r', '\n')
	return append(b, p...), nil
}

// errFrame is a malformed UDP frame from the server.
var errFrame = errors.New("trojan: malformed UDP frame")

// readPacket reads one UDP frame from r into p and returns the payload's
// length and its source. A payload longer than p is cut to len(p); the
// rest is read and dropped, so the stream stays in step. An error other
// than errStart came after part of a frame was read: the stream is out of
// step from there.
func readPacket(r *bufio.Reader, p []byte) (int, flow.Addr, error) {
	var from flow.Addr
	atyp, err := r.ReadByte()
	if err != nil {
		return 0, from, &startError{err}
	}
	var hdr [1 + 255 + 2 + 2 + 2]byte
	var alen int
	switch atyp {
	case atypIPv4:
		alen = 4
	case atypIPv6:
		alen = 16
	case atypDomain:
		l, err := r.ReadByte()
		if err != nil {
			return 0, from, eof.Unexpected(err)
		}
		if l == 0 {
			return 0, from, errFrame
		}
		alen = 1 + int(l)
		hdr[0] = l
	default:
		return 0, from, fmt.Errorf("%w: address type %d", errFrame, atyp)
	}
	start := 0
	if atyp == atypDomain {
		start = 1
	}
	rest := hdr[start : alen+6]
	if _, err := io.ReadFull(r, rest); err != nil {
		return 0, from, eof.Unexpected(err)
	}
	b := hdr[:alen+6]
	switch atyp {
	case atypIPv4:
		from.IP = netip.AddrFrom4([4]byte(b[:4]))
	case atypIPv6:
		from.IP = netip.AddrFrom16([16]byte(b[:16])).Unmap()
	case atypDomain:
		from = flow.NameAddr(string(b[1:alen]), 0)
	}
	b = b[alen:]
	from.Port = binary.BigEndian.Uint16(b)
	n := int(binary.BigEndian.Uint16(b[2:]))
	if b[4] != '\r' || b[5] != '\n' {
		return 0, from, fmt.Errorf("%w: no CRLF after the length", errFrame)
	}
	m := min(n, len(p))
	if _, err := io.ReadFull(r, p[:m]); err != nil {
		return 0, from, eof.Unexpected(err)
	}
	if _, err := r.Discard(n - m); err != nil {
		return 0, from, eof.Unexpected(err)
	}
	return m, from, nil
}

// startError is a failure to read the first byte of a frame: nothing of
// the frame was consumed (a read deadline there leaves the stream usable).
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }
