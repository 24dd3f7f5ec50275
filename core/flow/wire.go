package flow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// AddrTypes are the address-type codes a proxy protocol writes before an
// address: SOCKS5 and Trojan use 1, 3, 4; VLESS and VMess 1, 2, 3.
type AddrTypes struct{ IPv4, Name, IPv6 byte }

// AppendHost appends a's host as proxy protocols write it: the type code,
// then 4 or 16 address bytes, or a length byte and the name. The port is
// not written (protocols put it before or after).
func (a Addr) AppendHost(b []byte, t AddrTypes) ([]byte, error) {
	switch {
	case a.IP.Is4():
		ip := a.IP.As4()
		b = append(b, t.IPv4)
		return append(b, ip[:]...), nil
	case a.IP.Is6():
		ip := a.IP.As16()
		b = append(b, t.IPv6)
		return append(b, ip[:]...), nil
	case a.Name != "":
		if len(a.Name) > 255 {
			return nil, fmt.Errorf("destination name of %d bytes, at most 255", len(a.Name))
		}
		b = append(b, t.Name, byte(len(a.Name)))
		return append(b, a.Name...), nil
	}
	return nil, errors.New("no destination address")
}

// ErrShortAddr says an address ends before its type says it should.
var ErrShortAddr = errors.New("truncated address")

// ParseHostPort reads an address as AppendHost writes it, followed by a
// big-endian port, from the front of b, and returns it with its length in
// bytes. A name of only dots (nothing once trimmed) is refused.
func ParseHostPort(b []byte, t AddrTypes) (Addr, int, error) {
	if len(b) < 1 {
		return Addr{}, 0, ErrShortAddr
	}
	var a Addr
	var n int
	switch b[0] {
	case t.IPv4:
		if len(b) < 1+4+2 {
			return a, 0, ErrShortAddr
		}
		a.IP = netip.AddrFrom4([4]byte(b[1:5]))
		n = 5
	case t.IPv6:
		if len(b) < 1+16+2 {
			return a, 0, ErrShortAddr
		}
		a.IP = netip.AddrFrom16([16]byte(b[1:17])).Unmap()
		n = 17
	case t.Name:
		if len(b) < 2 || len(b) < 2+int(b[1])+2 {
			return a, 0, ErrShortAddr
		}
		l := int(b[1])
		a = NameAddr(string(b[2:2+l]), 0)
		if !a.IsValid() { // empty, or only dots: NameAddr trims them to nothing
			return Addr{}, 0, errors.New("empty domain name in address")
		}
		n = 2 + l
	default:
		return a, 0, fmt.Errorf("address type %d", b[0])
	}
	a.Port = binary.BigEndian.Uint16(b[n:])
	return a, n + 2, nil
}
