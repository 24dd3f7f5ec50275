// Package muxcool is the frame format of Mux.Cool, v2ray's multiplexing,
// as far as two clients speak it: a v2ray-plugin server expects it on its
// WebSocket (shadowsocks: one TCP sub-connection), and XUDP carries a
// VLESS Vision user's UDP session in it (vless: session 0). Each client
// keeps its own session logic; the frame layout is here once.
//
// A frame is
//
//	u16 metadata length | metadata | (option & OptData) u16 data length | data
//	metadata = u16 session id | status | option | [network | u16 port | address type | address | extra]
package muxcool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/eof"
)

// Frame statuses, the option bit that says a frame has data, and the
// networks of a frame's address.
const (
	StatusNew       byte = 1
	StatusKeep      byte = 2
	StatusEnd       byte = 3
	StatusKeepAlive byte = 4

	OptData byte = 1

	NetTCP byte = 1
	NetUDP byte = 2
)

// MaxData is the most data one frame carries (its length is a u16).
const MaxData = 0xffff

// Address types (VLESS's).
const (
	atypIPv4   byte = 1
	atypDomain byte = 2
	atypIPv6   byte = 3
)

var addrTypes = flow.AddrTypes{IPv4: atypIPv4, Name: atypDomain, IPv6: atypIPv6}

// Meta is what AppendMeta writes: a frame's metadata.
type Meta struct {
	Session uint16
	Status  byte
	Opt     byte
	Net     byte      // the address's network, with Addr
	Addr    flow.Addr // not valid: the frame carries no address
	Extra   []byte    // after the address (XUDP's global id), with Addr
}

// AppendMeta appends m's metadata length and metadata.
func AppendMeta(b []byte, m Meta) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, m.Session)
	b = append(b, m.Status, m.Opt)
	if m.Addr.IsValid() {
		b = append(b, m.Net)
		b = binary.BigEndian.AppendUint16(b, m.Addr.Port)
		var err error
		if b, err = m.Addr.AppendHost(b, addrTypes); err != nil {
			return nil, err
		}
		b = append(b, m.Extra...)
	}
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start-2))
	return b, nil
}

// Head is a frame's metadata as ReadMeta reads it.
type Head struct {
	Session uint16
	Status  byte
	Opt     byte
	Rest    []byte // what follows the option: network and address (ParseAddr), extra
}

// ReadMeta reads a frame's metadata length and metadata into buf, whose
// length bounds it.
func ReadMeta(r io.Reader, buf []byte) (Head, error) {
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return Head{}, err
	}
	n := int(binary.BigEndian.Uint16(l[:]))
	if n < 4 || n > len(buf) {
		return Head{}, fmt.Errorf("mux.cool: metadata of %d bytes", n)
	}
	m := buf[:n]
	if _, err := io.ReadFull(r, m); err != nil {
		return Head{}, eof.Unexpected(err)
	}
	return Head{Session: binary.BigEndian.Uint16(m), Status: m[2], Opt: m[3], Rest: m[4:]}, nil
}

// ReadDataLen reads the data length of a frame whose option has OptData.
func ReadDataLen(r io.Reader) (int, error) {
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return 0, eof.Unexpected(err)
	}
	return int(binary.BigEndian.Uint16(l[:])), nil
}

// ReadData reads a frame's n bytes of data into p, and discards what does
// not fit (all of it for a nil p).
func ReadData(r io.Reader, p []byte, n int) (int, error) {
	m := min(n, len(p))
	if _, err := io.ReadFull(r, p[:m]); err != nil {
		return 0, eof.Unexpected(err)
	}
	if n > m {
		if _, err := io.CopyN(io.Discard, r, int64(n-m)); err != nil {
			return 0, eof.Unexpected(err)
		}
	}
	return m, nil
}

// ParseAddr parses the network, port and address at the front of a
// frame's Rest.
func ParseAddr(b []byte) (network byte, a flow.Addr, err error) {
	bad := errors.New("mux.cool: malformed address")
	if len(b) < 4 {
		return 0, flow.Addr{}, bad
	}
	network, port := b[0], binary.BigEndian.Uint16(b[1:3])
	b = b[3:]
	switch b[0] {
	case atypIPv4:
		if len(b) < 5 {
			return 0, flow.Addr{}, bad
		}
		return network, flow.AddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[1:5])), port)), nil
	case atypIPv6:
		if len(b) < 17 {
			return 0, flow.Addr{}, bad
		}
		return network, flow.AddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[1:17])).Unmap(), port)), nil
	case atypDomain:
		if len(b) < 2 || len(b) < 2+int(b[1]) || b[1] == 0 {
			return 0, flow.Addr{}, bad
		}
		a := flow.NameAddr(string(b[2:2+int(b[1])]), port)
		if !a.IsValid() {
			return 0, flow.Addr{}, bad
		}
		return network, a, nil
	}
	return 0, flow.Addr{}, bad
}
