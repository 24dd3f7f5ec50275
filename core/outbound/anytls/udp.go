package anytls

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// ListenPacket opens a UDP session: a stream to the UDP-over-TCP magic
// address, with the request (not connected, to dst) first. Each datagram
// then goes as address | u16 length | data, both ways.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	st, err := c.open(ctx, flow.NameAddr(uotMagic, 0))
	if err != nil {
		if strings.HasPrefix(err.Error(), "anytls: ") {
			return nil, err
		}
		return nil, fmt.Errorf("anytls: UDP to %s via %s: %w", dst, c.name, err)
	}
	req, err := appendAddr([]byte{0}, dst, socksTypes)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("anytls: UDP to %s via %s: %w", dst, c.name, err)
	}
	if _, err := st.Write(req); err != nil {
		st.Close()
		return nil, fmt.Errorf("anytls: UDP to %s via %s: %w", dst, c.name, err)
	}
	return &packetConn{st: st, c: c, r: bufio.NewReaderSize(st, 2048)}, nil
}

// packetConn is a UDP session over a stream.
type packetConn struct {
	st *stream
	c  *Client

	rmu     sync.Mutex
	r       *bufio.Reader
	srcFlow flow.Addr
	srcAddr net.Addr

	wmu    sync.Mutex
	wbuf   []byte
	dst    flow.Addr
	dstRaw []byte
}

// ReadFrom reads the next datagram.
func (pc *packetConn) ReadFrom(p []byte) (int, net.Addr, error) {
	pc.rmu.Lock()
	defer pc.rmu.Unlock()
	a, err := readUoTAddr(pc.r)
	if err != nil {
		return 0, nil, err
	}
	var l [2]byte
	if _, err := io.ReadFull(pc.r, l[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint16(l[:]))
	m := min(n, len(p))
	if _, err := io.ReadFull(pc.r, p[:m]); err != nil {
		return 0, nil, err
	}
	if _, err := pc.r.Discard(n - m); err != nil {
		return 0, nil, err
	}
	if pc.srcAddr == nil || a != pc.srcFlow {
		pc.srcFlow, pc.srcAddr = a, a
	}
	return m, pc.srcAddr, nil
}

// readUoTAddr reads a UoT packet address from r.
func readUoTAddr(r *bufio.Reader) (flow.Addr, error) {
	typ, err := r.Peek(2)
	if err != nil {
		return flow.Addr{}, err
	}
	var n int
	switch typ[0] {
	case uotTypes.IPv4:
		n = 1 + 4 + 2
	case uotTypes.IPv6:
		n = 1 + 16 + 2
	case uotTypes.Name:
		n = 2 + int(typ[1]) + 2
	default:
		return flow.Addr{}, fmt.Errorf("anytls: UDP: address type %d", typ[0])
	}
	b, err := r.Peek(n)
	if err != nil {
		return flow.Addr{}, err
	}
	a, _, err := flow.ParseHostPort(b, uotTypes)
	if err != nil {
		return flow.Addr{}, fmt.Errorf("anytls: UDP: %w", err)
	}
	r.Discard(n)
	return a, nil
}

// WriteTo sends p to addr.
func (pc *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("anytls: UDP via %s: %w", pc.c.name, err)
	}
	if len(p) > 0xffff {
		return 0, fmt.Errorf("anytls: UDP to %s via %s: datagram of %d bytes", dst, pc.c.name, len(p))
	}
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	if pc.dstRaw == nil || dst != pc.dst {
		raw, err := appendAddr(pc.dstRaw[:0], dst, uotTypes)
		if err != nil {
			return 0, fmt.Errorf("anytls: UDP via %s: %w", pc.c.name, err)
		}
		pc.dst, pc.dstRaw = dst, raw
	}
	pc.wbuf = append(pc.wbuf[:0], pc.dstRaw...)
	pc.wbuf = binary.BigEndian.AppendUint16(pc.wbuf, uint16(len(p)))
	pc.wbuf = append(pc.wbuf, p...)
	if _, err := pc.st.Write(pc.wbuf); err != nil {
		return 0, fmt.Errorf("anytls: UDP to %s via %s: %w", dst, pc.c.name, err)
	}
	return len(p), nil
}

// Close ends the session's stream.
func (pc *packetConn) Close() error { return pc.st.Close() }

// LocalAddr returns the session's local address.
func (pc *packetConn) LocalAddr() net.Addr { return pc.st.LocalAddr() }

// SetDeadline sets the read deadline.
func (pc *packetConn) SetDeadline(t time.Time) error { return pc.st.SetReadDeadline(t) }

// SetReadDeadline makes ReadFrom fail after t.
func (pc *packetConn) SetReadDeadline(t time.Time) error { return pc.st.SetReadDeadline(t) }

// SetWriteDeadline does nothing (see stream.SetWriteDeadline).
func (pc *packetConn) SetWriteDeadline(time.Time) error { return nil }
