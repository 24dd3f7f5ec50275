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
	"net/netip"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
)

// XUDP carries a UDP session over one VLESS stream of command Mux: the
// servers refuse plain UDP streams (command UDP) of a Vision user, as Xray
// does, so a Vision client sends its UDP this way (inside Vision, whose
// padding ends after the first packets as UDP frames are no TLS).
//
// The stream is a sequence of Mux.Cool frames, all of session 0:
//
//	u16 metadata length | metadata | (option & 1) u16 data length | data
//	metadata = u16 session id | status | option | [network | u16 port | address type | address]
//
// Status 1 (new) opens the session, with the first datagram's destination
// (network 2, UDP) and an 8-byte global id after it; status 2 (keep)
// carries further datagrams, each with its address (the destination from
// the client, the source from the server); 3 (end) closes; 4 (keep-alive)
// carries nothing to deliver. Address types are 1 (IPv4), 2 (name), 3
// (IPv6), as in VLESS.

// Mux.Cool frame statuses and options.
const (
	muxNew       byte = 1
	muxKeep      byte = 2
	muxEnd       byte = 3
	muxKeepAlive byte = 4

	muxOptData byte = 1
	muxNetUDP  byte = 2
)

// maxMuxMeta bounds a frame's metadata: session id, status, option,
// network, port, the longest address and the global id.
const maxMuxMeta = 2 + 1 + 1 + 1 + 2 + 1 + 1 + 255 + 8

var vlessAddrTypes = flow.AddrTypes{IPv4: atypIPv4, Name: atypDomain, IPv6: atypIPv6}

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
	status := muxKeep
	if fresh {
		status = muxNew
	}
	b = append(b, 0, 0, 0, 0, status, muxOptData, muxNetUDP) // length (below), session 0
	b = binary.BigEndian.AppendUint16(b, dst.Port)
	b, err := dst.AppendHost(b, vlessAddrTypes)
	if err != nil {
		return nil, err
	}
	if fresh {
		b = append(b, gid[:]...)
	}
	binary.BigEndian.PutUint16(b, uint16(len(b)-2))
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
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return 0, from, false, err
	}
	ml := int(binary.BigEndian.Uint16(l[:]))
	if ml < 4 || ml > len(meta) {
		return 0, from, false, fmt.Errorf("xudp: metadata of %d bytes", ml)
	}
	m := meta[:ml]
	if _, err := io.ReadFull(r, m); err != nil {
		return 0, from, false, noEOF(err)
	}
	status, opt := m[2], m[3]
	switch status {
	case muxNew, muxKeep:
		deliver = true
		if ml > 4 {
			if from, err = parseMuxAddr(m[4:]); err != nil {
				return 0, from, false, err
			}
		}
	case muxKeepAlive:
	case muxEnd:
		return 0, from, false, io.EOF
	default:
		return 0, from, false, fmt.Errorf("xudp: frame status %d", status)
	}
	if opt&muxOptData == 0 {
		return 0, from, false, nil
	}
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return 0, from, false, noEOF(err)
	}
	dl := int(binary.BigEndian.Uint16(l[:]))
	n = min(dl, len(p))
	if _, err := io.ReadFull(r, p[:n]); err != nil {
		return 0, from, false, noEOF(err)
	}
	if dl > n {
		if _, err := io.CopyN(io.Discard, r, int64(dl-n)); err != nil {
			return 0, from, false, noEOF(err)
		}
	}
	return n, from, deliver, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseMuxAddr parses network, port and address of a frame's metadata.
func parseMuxAddr(b []byte) (flow.Addr, error) {
	bad := errors.New("xudp: malformed address")
	if len(b) < 4 || b[0] != muxNetUDP {
		return flow.Addr{}, bad
	}
	port := binary.BigEndian.Uint16(b[1:3])
	b = b[3:]
	switch b[0] {
	case atypIPv4:
		if len(b) < 5 {
			return flow.Addr{}, bad
		}
		return flow.AddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[1:5])), port)), nil
	case atypIPv6:
		if len(b) < 17 {
			return flow.Addr{}, bad
		}
		return flow.AddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[1:17])).Unmap(), port)), nil
	case atypDomain:
		if len(b) < 2 || len(b) < 2+int(b[1]) || b[1] == 0 {
			return flow.Addr{}, bad
		}
		a := flow.NameAddr(string(b[2:2+int(b[1])]), port)
		if !a.IsValid() {
			return flow.Addr{}, bad
		}
		return a, nil
	}
	return flow.Addr{}, bad
}

// Close ends the session.
func (x *xudpConn) Close() error {
	err := net.ErrClosed
	x.closeOnce.Do(func() {
		err = x.conn.Close()
		x.client.flows.Remove(x)
	})
	return err
}

// LocalAddr returns an unspecified UDP address.
func (x *xudpConn) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4zero} }

func (x *xudpConn) SetDeadline(t time.Time) error      { return x.conn.SetDeadline(t) }
func (x *xudpConn) SetReadDeadline(t time.Time) error  { return x.conn.SetReadDeadline(t) }
func (x *xudpConn) SetWriteDeadline(t time.Time) error { return x.conn.SetWriteDeadline(t) }
