// Package uot is sing-box's UDP over TCP (UoT), versions 1 and 2: a UDP
// session carried inside one proxy stream, for servers and networks where
// the protocol's own UDP does not get through. sing-box serves it on every
// inbound whose stream is addressed to a magic name, so that any stream
// protocol can carry it (Shadowsocks, AnyTLS).
//
// Version 1 names sp.udp-over-tcp.arpa and sends each datagram as address
// (UoT's own type codes: 0 IPv4, 1 IPv6, 2 name), port, u16 length and the
// data, both ways. Version 2 names sp.v2.udp-over-tcp.arpa and starts the
// stream with a request: isConnect (u8) and a SOCKS5 address; with
// isConnect 0, used here, the datagrams then go as in version 1, so that a
// session can reach any destination.
// (sing-box.sagernet.org/configuration/shared/udp-over-tcp)
package uot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/eof"
)

// The magic destinations of the two versions.
const (
	MagicV1 = "sp.udp-over-tcp.arpa"
	MagicV2 = "sp.v2.udp-over-tcp.arpa"
)

// MaxDatagram is the largest datagram a frame carries (its u16 length).
const MaxDatagram = 0xffff

var (
	// socksTypes are SOCKS5's address types: the version 2 request's.
	socksTypes = flow.AddrTypes{IPv4: 1, Name: 3, IPv6: 4}
	// packetTypes are the frames' own.
	packetTypes = flow.AddrTypes{IPv4: 0, IPv6: 1, Name: 2}
)

// Magic returns the destination a stream for version (1 or 2) is opened
// to.
func Magic(version int) (flow.Addr, error) {
	switch version {
	case 1:
		return flow.NameAddr(MagicV1, 0), nil
	case 2:
		return flow.NameAddr(MagicV2, 0), nil
	}
	return flow.Addr{}, fmt.Errorf("udp-over-tcp version %d (1 or 2)", version)
}

// AppendRequest appends what a version 2 stream starts with: not
// connected, first destination dst. Version 1 has no request.
func AppendRequest(b []byte, version int, dst flow.Addr) ([]byte, error) {
	if version == 1 {
		return b, nil
	}
	b = append(b, 0) // isConnect: no, every frame names its destination
	b, err := dst.AppendHost(b, socksTypes)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint16(b, dst.Port), nil
}

// AppendFrame appends one datagram's frame: address, port, length, data.
func AppendFrame(b []byte, dst flow.Addr, p []byte) ([]byte, error) {
	if len(p) > MaxDatagram {
		return nil, fmt.Errorf("datagram of %d bytes, at most %d", len(p), MaxDatagram)
	}
	b, err := dst.AppendHost(b, packetTypes)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint16(b, dst.Port)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	return append(b, p...), nil
}

// ErrFrame is a frame from the server that cannot be read: the stream is
// out of step from there.
var ErrFrame = errors.New("malformed UDP-over-TCP frame")

// ReadFrame reads one frame from r into p and returns the datagram's length
// and its source. A datagram longer than p is cut to len(p) and the rest
// dropped, so the stream stays in step. io.EOF means the stream ended
// between frames.
func ReadFrame(r *bufio.Reader, p []byte) (int, flow.Addr, error) {
	h, err := r.Peek(2)
	if len(h) == 0 {
		return 0, flow.Addr{}, err
	}
	var n int
	switch h[0] {
	case packetTypes.IPv4:
		n = 1 + 4
	case packetTypes.IPv6:
		n = 1 + 16
	case packetTypes.Name:
		if len(h) < 2 {
			return 0, flow.Addr{}, eof.Unexpected(err)
		}
		if h[1] == 0 {
			return 0, flow.Addr{}, fmt.Errorf("%w: empty name", ErrFrame)
		}
		n = 2 + int(h[1])
	default:
		return 0, flow.Addr{}, fmt.Errorf("%w: address type %d", ErrFrame, h[0])
	}
	n += 2 + 2 // port, length
	h, err = r.Peek(n)
	if err != nil {
		return 0, flow.Addr{}, eof.Unexpected(err)
	}
	from, _, err := flow.ParseHostPort(h, packetTypes)
	if err != nil {
		return 0, flow.Addr{}, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	l := int(binary.BigEndian.Uint16(h[n-2:]))
	r.Discard(n)
	m := min(l, len(p))
	if _, err := io.ReadFull(r, p[:m]); err != nil {
		return 0, flow.Addr{}, eof.Unexpected(err)
	}
	if _, err := r.Discard(l - m); err != nil {
		return 0, flow.Addr{}, eof.Unexpected(err)
	}
	return m, from, nil
}

// PacketConn is a UDP session over one stream. The version 2 request goes
// with the first datagram, in the same write.
type PacketConn struct {
	st   net.Conn
	name string // "shadowsocks: UDP via server", for errors

	rmu     sync.Mutex
	r       *bufio.Reader
	lastSrc flow.Addr
	lastBox net.Addr // lastSrc boxed once, so ReadFrom does not allocate

	wmu  sync.Mutex
	req  []byte // the request until the first write
	wbuf []byte
}

// NewPacketConn returns the session over st, a stream opened to
// Magic(version), whose first destination is dst. name prefixes its
// errors (say "shadowsocks: UDP via 1.2.3.4:8388").
func NewPacketConn(st net.Conn, version int, dst flow.Addr, name string) (*PacketConn, error) {
	req, err := AppendRequest(nil, version, dst)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &PacketConn{st: st, name: name, r: bufio.NewReaderSize(st, 4<<10), req: req}, nil
}

// ReadFrom reads the next datagram.
func (pc *PacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	pc.rmu.Lock()
	defer pc.rmu.Unlock()
	n, from, err := ReadFrame(pc.r, p)
	if err != nil {
		if errors.Is(err, ErrFrame) {
			pc.st.Close()
		}
		return 0, nil, fmt.Errorf("%s: %w", pc.name, err)
	}
	if pc.lastBox == nil || from != pc.lastSrc {
		pc.lastSrc, pc.lastBox = from, from
	}
	return n, pc.lastBox, nil
}

// WriteTo sends p to addr (a flow.Addr or *net.UDPAddr).
func (pc *PacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", pc.name, err)
	}
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	b, err := AppendFrame(append(pc.wbuf[:0], pc.req...), dst, p)
	if err != nil {
		return 0, fmt.Errorf("%s: to %s: %w", pc.name, dst, err)
	}
	if cap(b) <= 4<<10 {
		pc.wbuf = b // keep a buffer of common size, not a huge one
	}
	if _, err := pc.st.Write(b); err != nil {
		return 0, fmt.Errorf("%s: to %s: %w", pc.name, dst, err)
	}
	pc.req = nil
	return len(p), nil
}

// Close ends the session's stream.
func (pc *PacketConn) Close() error { return pc.st.Close() }

// LocalAddr returns the stream's local address.
func (pc *PacketConn) LocalAddr() net.Addr { return pc.st.LocalAddr() }

// SetDeadline sets the stream's deadlines.
func (pc *PacketConn) SetDeadline(t time.Time) error { return pc.st.SetDeadline(t) }

// SetReadDeadline makes ReadFrom fail after t.
func (pc *PacketConn) SetReadDeadline(t time.Time) error { return pc.st.SetReadDeadline(t) }

// SetWriteDeadline makes WriteTo fail after t.
func (pc *PacketConn) SetWriteDeadline(t time.Time) error { return pc.st.SetWriteDeadline(t) }
