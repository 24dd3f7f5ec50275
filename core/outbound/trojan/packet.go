package trojan

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
)

// packetBufs holds the buffers datagrams are framed in on their way out.
var packetBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 1+1+255+2+2+2+maxPacket)
	return &b
}}

// readBufferSize is the UDP stream's read buffer: a frame header and a
// common datagram; larger payloads are read through it into the caller's
// buffer.
const readBufferSize = 4 << 10

// packetConn is a UDP session over one UDP ASSOCIATE stream. Each frame
// carries its own address, so every destination shares the stream.
type packetConn struct {
	c  *Client
	s  *reqconn.Conn
	wm sync.Mutex // one frame at a time on the stream

	rm       sync.Mutex
	br       *bufio.Reader
	last     flow.Addr // the previous datagram's source, and it boxed:
	lastAddr net.Addr  // a reply from the same peer needs no allocation
}

func newPacketConn(c *Client, s *reqconn.Conn) *packetConn {
	return &packetConn{c: c, s: s, br: bufio.NewReaderSize(s, readBufferSize)}
}

// WriteTo sends p to addr (a flow.Addr or *net.UDPAddr) as one frame.
func (pc *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("trojan: udp via %s: %w", pc.c.stack.Addr(), err)
	}
	bp := packetBufs.Get().(*[]byte)
	defer packetBufs.Put(bp)
	frame, err := appendPacket((*bp)[:0], dst, p)
	if err != nil {
		return 0, fmt.Errorf("%w (server %s)", err, pc.c.stack.Addr())
	}
	pc.wm.Lock()
	_, err = pc.s.Write(frame)
	pc.wm.Unlock()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadFrom returns the next datagram and its source (a flow.Addr). A
// datagram longer than p is cut to len(p).
func (pc *packetConn) ReadFrom(p []byte) (int, net.Addr, error) {
	pc.rm.Lock()
	defer pc.rm.Unlock()
	n, from, err := readPacket(pc.br, p)
	if err != nil {
		var se *startError
		if !errors.As(err, &se) {
			pc.s.Close() // out of step with the server's frames
		}
		return 0, nil, fmt.Errorf("trojan: udp via %s: %w", pc.c.stack.Addr(), err)
	}
	if from != pc.last || pc.lastAddr == nil {
		pc.last, pc.lastAddr = from, from
	}
	return n, pc.lastAddr, nil
}

// Close closes the stream.
func (pc *packetConn) Close() error { return pc.s.Close() }

// LocalAddr returns an unspecified UDP address: datagrams leave through a
// TCP stream.
func (pc *packetConn) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4zero} }

// SetDeadline sets the stream's deadlines.
func (pc *packetConn) SetDeadline(t time.Time) error { return pc.s.SetDeadline(t) }

// SetReadDeadline sets the stream's read deadline.
func (pc *packetConn) SetReadDeadline(t time.Time) error { return pc.s.SetReadDeadline(t) }

// SetWriteDeadline sets the stream's write deadline.
func (pc *packetConn) SetWriteDeadline(t time.Time) error { return pc.s.SetWriteDeadline(t) }
