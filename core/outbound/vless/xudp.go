package vless

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/muxcool"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
)

// XUDP carries a UDP session over one VLESS stream of command Mux: the
// servers refuse plain UDP streams (command UDP) of a Vision user, as Xray
// does, so a Vision client sends its UDP this way (inside Vision, whose
// padding ends after the first packets as UDP frames are no TLS).
//
// The stream is a sequence of Mux.Cool frames (package muxcool), all of
// session 0. Status new opens the session, with the first datagram's
// destination (network UDP) and an 8-byte global id after it; status keep
// carries further datagrams, each with its address (the destination from
// the client, the source from the server); end closes; keep-alive carries
// nothing to deliver.

// maxMuxMeta bounds a frame's metadata: session id, status, option,
// network, port, the longest address and the global id.
const maxMuxMeta = 2 + 1 + 1 + 1 + 2 + 1 + 1 + 255 + 8

// xudpConn is a UDP session over one XUDP stream.
type xudpConn struct {
	client *Client
	conn   *reqconn.Conn
	br     *bufio.Reader
	first  flow.Addr // the session's first destination, the source of frames without an address

	wmu   sync.Mutex
	fresh bool // the next frame opens the session
	gid   [8]byte
	wbuf  []byte

	rmu  sync.Mutex
	meta [maxMuxMeta]byte

	closeOnce sync.Once
}

// listenXUDP opens the session's stream (dialed now, so that an
// unreachable server shows here); its first datagram goes to dst.
func (c *Client) listenXUDP(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	conn, err := c.dialStream(ctx, cmdMux, dst)
	if err != nil {
		return nil, err
	}
	x := &xudpConn{client: c, conn: conn, br: bufio.NewReaderSize(conn, 4<<10), first: dst, fresh: true}
	rand.Read(x.gid[:])
	return x, nil
}

// WriteTo sends p to addr (a flow.Addr or *net.UDPAddr).
func (x *xudpConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("vless: udp via %s: %w", x.client.addr, err)
	}
	if err := x.client.checkUDP(dst); err != nil {
		return 0, err
	}
	if len(p) > maxPacket {
		return 0, fmt.Errorf("vless: udp via %s: datagram of %d bytes, at most %d", x.client.addr, len(p), maxPacket)
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	b, err := appendXUDP(x.wbuf[:0], dst, p, x.fresh, &x.gid)
	if err != nil {
		return 0, fmt.Errorf("vless: udp via %s: %w", x.client.addr, err)
	}
	x.wbuf = b[:0]
	if _, err := x.conn.Write(b); err != nil {
		return 0, err
	}
	x.fresh = false
	return len(p), nil
}

// appendXUDP appends the frame that carries p to dst: a new-session frame
// (with gid) when fresh, a keep frame otherwise.
func appendXUDP(b []byte, dst flow.Addr, p []byte, fresh bool, gid *[8]byte) ([]byte, error) {
	m := muxcool.Meta{Status: muxcool.StatusKeep, Opt: muxcool.OptData, Net: muxcool.NetUDP, Addr: dst}
	if fresh {
		m.Status, m.Extra = muxcool.StatusNew, gid[:]
	}
	b, err := muxcool.AppendMeta(b, m)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	return append(b, p...), nil
}

// ReadFrom returns the next datagram and its source.
func (x *xudpConn) ReadFrom(p []byte) (int, net.Addr, error) {
	x.rmu.Lock()
	defer x.rmu.Unlock()
	for {
		n, from, deliver, err := readXUDP(x.br, x.meta[:], p)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = net.ErrClosed
			}
			return 0, nil, fmt.Errorf("vless: udp via %s: %w", x.client.addr, err)
		}
		if !deliver {
			continue
		}
		if !from.IsValid() {
			from = x.first
		}
		return n, from, nil
	}
}

// readXUDP reads one frame from r into p (meta holds the metadata). It
// reports whether the frame carries a datagram to deliver; a frame of
// status end ends the session (io.EOF). A datagram longer than p is cut.
func readXUDP(r io.Reader, meta, p []byte) (n int, from flow.Addr, deliver bool, err error) {
	h, err := muxcool.ReadMeta(r, meta)
	if err != nil {
		return 0, from, false, err
	}
	switch h.Status {
	case muxcool.StatusNew, muxcool.StatusKeep:
		deliver = true
		if len(h.Rest) > 0 {
			var network byte
			network, from, err = muxcool.ParseAddr(h.Rest)
			if err == nil && network != muxcool.NetUDP {
				err = fmt.Errorf("xudp: a source of network %d, not UDP", network)
			}
			if err != nil {
				return 0, from, false, err
			}
		}
	case muxcool.StatusKeepAlive:
	case muxcool.StatusEnd:
		return 0, from, false, io.EOF
	default:
		return 0, from, false, fmt.Errorf("xudp: frame status %d", h.Status)
	}
	if h.Opt&muxcool.OptData == 0 {
		return 0, from, false, nil
	}
	dl, err := muxcool.ReadDataLen(r)
	if err != nil {
		return 0, from, false, err
	}
	if n, err = muxcool.ReadData(r, p, dl); err != nil {
		return 0, from, false, err
	}
	return n, from, deliver, nil
}

// Close ends the session.
func (x *xudpConn) Close() error { return x.client.flows.CloseOnce(&x.closeOnce, x, x.conn.Close) }

// LocalAddr returns an unspecified UDP address.
func (x *xudpConn) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4zero} }

func (x *xudpConn) SetDeadline(t time.Time) error      { return x.conn.SetDeadline(t) }
func (x *xudpConn) SetReadDeadline(t time.Time) error  { return x.conn.SetReadDeadline(t) }
func (x *xudpConn) SetWriteDeadline(t time.Time) error { return x.conn.SetWriteDeadline(t) }
