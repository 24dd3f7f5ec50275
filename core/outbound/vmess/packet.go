package vmess

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
)

// maxDatagram is the largest datagram one chunk carries: a chunk's size
// field is 16 bits and covers the tag and the padding.
const maxDatagram = 0xffff - tagSize - maxPadding

// streamDialTimeout bounds dialing a UDP stream from WriteTo, which has no
// context of its own.
const streamDialTimeout = 15 * time.Second

// datagramBufs hold received datagrams on their way to ReadFrom.
var datagramBufs = sync.Pool{New: func() any { b := make([]byte, maxDatagram); return &b }}

// packet is a received datagram (or a stream's failure).
type packet struct {
	buf  *[]byte
	n    int
	from net.Addr
	err  error
}

// packetConn is a UDP session: one VMess stream (command UDP) per
// destination, each datagram one chunk.
type packetConn struct {
	client *Client
	ctx    context.Context // for dials from WriteTo; ends on Close
	cancel context.CancelFunc
	in     chan packet
	done   chan struct{}
	wg     sync.WaitGroup // stream readers

	mu      sync.Mutex
	streams map[flow.Addr]*udpStream
	closed  bool
	rdl     time.Time
	rdlSet  chan struct{} // closed (and replaced) when the read deadline changes
}

// udpStream is the stream to one destination.
type udpStream struct {
	dst   flow.Addr
	from  net.Addr      // dst boxed once, so ReadFrom does not allocate
	ready chan struct{} // closed when dialing ended
	conn  *conn
	err   error
}

// newPacketConn returns a session of c's; the flow's ctx lends it the
// panic reporter that its stream readers report to (see package guard).
func newPacketConn(c *Client, flowCtx context.Context) *packetConn {
	ctx, cancel := context.WithCancel(guard.WithReporter(context.Background(), guard.FromContext(flowCtx)))
	return &packetConn{client: c, ctx: ctx, cancel: cancel, in: make(chan packet, 32), done: make(chan struct{}),
		streams: map[flow.Addr]*udpStream{}, rdlSet: make(chan struct{})}
}

// stream returns the stream to dst, dialing it with ctx if there is none.
func (pc *packetConn) stream(ctx context.Context, dst flow.Addr) (*udpStream, error) {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return nil, net.ErrClosed
	}
	s, ok := pc.streams[dst]
	if !ok {
		s = &udpStream{dst: dst, from: dst, ready: make(chan struct{})}
		pc.streams[dst] = s
	}
	pc.mu.Unlock()
	if ok {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return s, s.err
	}
	s.conn, s.err = pc.client.dialStream(ctx, cmdUDP, dst)
	pc.mu.Lock()
	if s.err != nil {
		delete(pc.streams, dst)
	} else if pc.closed {
		s.conn.Close()
		s.conn, s.err = nil, net.ErrClosed
	} else {
		s.conn.packet = true
		pc.wg.Add(1)
		go pc.readLoop(s)
	}
	pc.mu.Unlock()
	close(s.ready)
	return s, s.err
}

// WriteTo sends p to addr (a flow.Addr or *net.UDPAddr) as one chunk on
// the stream to that destination, dialing it if needed.
func (pc *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("vmess: udp via %s: %w", pc.client.addr, err)
	}
	if len(p) > maxDatagram {
		return 0, fmt.Errorf("vmess: udp via %s: datagram of %d bytes, at most %d", pc.client.addr, len(p), maxDatagram)
	}
	pc.mu.Lock()
	s, ok := pc.streams[dst]
	pc.mu.Unlock()
	if ok {
		select {
		case <-s.ready:
		default:
			ok = false
		}
	}
	if !ok || s.err != nil {
		ctx, cancel := context.WithTimeout(pc.ctx, streamDialTimeout)
		s, err = pc.stream(ctx, dst)
		cancel()
		if err != nil {
			return 0, err
		}
	}
	if _, err := s.conn.Write(p); err != nil {
		pc.drop(s)
		return 0, err
	}
	return len(p), nil
}

// readLoop delivers the datagrams of s until it fails or the session
// closes. A stream that fails before its first datagram reports the error
// to ReadFrom (that is how a refused user shows); one that ends later is
// dropped quietly and dialed again on the next WriteTo.
func (pc *packetConn) readLoop(s *udpStream) {
	defer pc.wg.Done()
	if err := guard.Do(pc.ctx, "vmess udp reader", func() error { pc.read(s); return nil }); err != nil {
		pc.drop(s)
		select {
		case pc.in <- packet{err: fmt.Errorf("vmess: udp to %s via %s: %w", s.dst, pc.client.addr, err)}:
		case <-pc.done:
		}
	}
}

// read delivers s's datagrams until s ends.
func (pc *packetConn) read(s *udpStream) {
	got := false
	for {
		bp := datagramBufs.Get().(*[]byte)
		n, err := s.conn.readDatagram(*bp)
		if err != nil {
			datagramBufs.Put(bp)
			ours := false
			select {
			case <-s.conn.closed:
				ours = true
			default:
			}
			pc.drop(s)
			if ours || got {
				return
			}
			select {
			case pc.in <- packet{err: fmt.Errorf("vmess: udp to %s via %s: %w", s.dst, pc.client.addr, err)}:
			case <-pc.done:
			}
			return
		}
		got = true
		select {
		case pc.in <- packet{buf: bp, n: n, from: s.from}:
		case <-pc.done:
			datagramBufs.Put(bp)
			return
		}
	}
}

// drop closes s and forgets it, so that the next WriteTo dials again.
func (pc *packetConn) drop(s *udpStream) {
	pc.mu.Lock()
	if pc.streams[s.dst] == s {
		delete(pc.streams, s.dst)
	}
	pc.mu.Unlock()
	s.conn.Close()
}

// ReadFrom returns the next datagram from any destination, with that
// destination (a flow.Addr) as its source.
func (pc *packetConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		pc.mu.Lock()
		dl, changed := pc.rdl, pc.rdlSet
		pc.mu.Unlock()
		var expire <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, nil, os.ErrDeadlineExceeded
			}
			t := time.NewTimer(d)
			defer t.Stop()
			expire = t.C
		}
		select {
		case pk := <-pc.in:
			if pk.err != nil {
				return 0, nil, pk.err
			}
			n := copy(p, (*pk.buf)[:pk.n])
			datagramBufs.Put(pk.buf)
			return n, pk.from, nil
		case <-pc.done:
			return 0, nil, net.ErrClosed
		case <-expire:
			return 0, nil, os.ErrDeadlineExceeded
		case <-changed:
		}
	}
}

// Close closes every stream and ends the readers.
func (pc *packetConn) Close() error {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return net.ErrClosed
	}
	pc.closed = true
	streams := pc.streams
	pc.streams = nil
	pc.mu.Unlock()
	close(pc.done)
	pc.cancel()
	for _, s := range streams {
		select {
		case <-s.ready:
			if s.conn != nil {
				s.conn.Close()
			}
		default: // still dialing: stream() closes it when it sees closed
		}
	}
	pc.wg.Wait()
	pc.client.untrack(pc)
	return nil
}

// LocalAddr returns an unspecified UDP address: datagrams leave through
// streams, each with its own local TCP address.
func (pc *packetConn) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4zero} }

// SetDeadline sets the read and write deadlines.
func (pc *packetConn) SetDeadline(t time.Time) error {
	pc.SetReadDeadline(t)
	return pc.SetWriteDeadline(t)
}

// SetReadDeadline makes ReadFrom fail with os.ErrDeadlineExceeded at t.
func (pc *packetConn) SetReadDeadline(t time.Time) error {
	pc.mu.Lock()
	pc.rdl = t
	close(pc.rdlSet)
	pc.rdlSet = make(chan struct{})
	pc.mu.Unlock()
	return nil
}

// SetWriteDeadline sets the write deadline of every present stream.
func (pc *packetConn) SetWriteDeadline(t time.Time) error {
	pc.mu.Lock()
	var conns []*conn
	for _, s := range pc.streams {
		select {
		case <-s.ready:
			if s.conn != nil {
				conns = append(conns, s.conn)
			}
		default:
		}
	}
	pc.mu.Unlock()
	for _, c := range conns {
		c.SetWriteDeadline(t)
	}
	return nil
}
