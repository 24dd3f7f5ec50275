package flow

import (
	"errors"
	"fmt"
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
