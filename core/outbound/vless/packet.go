package vless

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
)

// streamDialTimeout bounds dialing a UDP stream from WriteTo, which has no
// context of its own.
const streamDialTimeout = 15 * time.Second

// packetBufs holds buffers for whole datagrams (received ones, and framed
// ones on their way out).
var packetBufs = sync.Pool{New: func() any {
	b := make([]byte, 2+maxPacket)
	return &b
}}

// packet is a received datagram (or a stream's failure) on its way from a
// stream's reader to ReadFrom.
type packet struct {
	buf  *[]byte
	n    int
	from net.Addr
	err  error
}

// packetConn is a UDP session: one VLESS stream (command UDP) per
// destination, each carrying u16-length-prefixed datagrams.
type packetConn struct {
	client *Client
	ctx    context.Context // for dialing streams from WriteTo, with the flow's panic reporter; ends on Close
	cancel context.CancelFunc
	in     chan packet
	done   chan struct{}
	wg     sync.WaitGroup // stream readers

	mu      sync.Mutex
	streams map[flow.Addr]*udpStream
	closed  bool
	wdl     time.Time // write deadline, applied to every stream

	rdl deadline
}

// udpStream is the stream to one destination.
type udpStream struct {
	dst   flow.Addr
	from  net.Addr      // dst, boxed once so ReadFrom does not allocate
	ready chan struct{} // closed when dialing ended
	conn  *reqconn.Conn // set when dialing succeeded
	err   error         // set when dialing failed
	start sync.Once     // starts the reader after the first write
}

// newPacketConn returns a session of c's; the flow's ctx lends it the
// panic reporter that its stream readers report to (see package guard).
func newPacketConn(c *Client, flowCtx context.Context) *packetConn {
	ctx, cancel := context.WithCancel(guard.WithReporter(context.Background(), guard.FromContext(flowCtx)))
	return &packetConn{
		client:  c,
		ctx:     ctx,
		cancel:  cancel,
		in:      make(chan packet, 32),
		done:    make(chan struct{}),
		streams: map[flow.Addr]*udpStream{},
	}
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
	wdl := pc.wdl
	pc.mu.Unlock()
	if ok {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if s.err != nil {
			return nil, s.err
		}
		return s, nil
	}
	s.conn, s.err = pc.client.dialStream(ctx, cmdUDP, dst)
	if s.err == nil {
		s.conn.SetWriteDeadline(wdl)
	}
	pc.mu.Lock()
	if s.err != nil {
		delete(pc.streams, dst) // the next WriteTo dials again
	} else if pc.closed {
		s.conn.Close()
		s.conn, s.err = nil, net.ErrClosed
	}
	pc.mu.Unlock()
	close(s.ready)
	return s, s.err
}

// WriteTo sends p to addr (a flow.Addr or *net.UDPAddr) on the stream to
// that destination, dialing it if needed.
func (pc *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("vless: udp via %s: %w", pc.client.addr, err)
	}
	if len(p) > maxPacket {
		return 0, fmt.Errorf("vless: udp via %s: datagram of %d bytes, at most %d", pc.client.addr, len(p), maxPacket)
	}
	s, err := pc.streamForWrite(dst)
	if err != nil {
		return 0, err
	}
	bp := packetBufs.Get().(*[]byte)
	frame, _ := appendPacket((*bp)[:0], p)
	_, err = s.conn.Write(frame)
	packetBufs.Put(bp)
	if err != nil {
		pc.drop(s)
		return 0, err
	}
	s.start.Do(func() {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		if !pc.closed { // Close is not waiting yet: it may count on this reader
			pc.wg.Add(1)
			go pc.readLoop(s)
		}
	})
	return len(p), nil
}

// streamForWrite returns the stream to dst; an existing one without waiting
// on the map lock for long.
func (pc *packetConn) streamForWrite(dst flow.Addr) (*udpStream, error) {
	pc.mu.Lock()
	s, ok := pc.streams[dst]
	closed := pc.closed
	pc.mu.Unlock()
	if closed {
		return nil, net.ErrClosed
	}
	if ok {
		select {
		case <-s.ready:
			if s.err == nil {
				return s, nil
			}
		default:
		}
	}
	ctx, cancel := context.WithTimeout(pc.ctx, streamDialTimeout)
	defer cancel()
	return pc.stream(ctx, dst)
}

// readLoop delivers the datagrams of s to ReadFrom until s fails or the
// session closes. A stream that fails before its first datagram reports
// the error to ReadFrom (that is how a refused user shows); one that ends
// later is dropped quietly and dialed again on the next WriteTo.
func (pc *packetConn) readLoop(s *udpStream) {
	defer pc.wg.Done()
	if err := guard.Do(pc.ctx, "vless udp reader", func() error { pc.read(s); return nil }); err != nil {
		pc.drop(s)
		select {
		case pc.in <- packet{err: fmt.Errorf("vless: udp to %s via %s: %w", s.dst, pc.client.addr, err)}:
		case <-pc.done:
		}
	}
}

// read delivers s's datagrams until s ends.
func (pc *packetConn) read(s *udpStream) {
	var hdr [2]byte
	got := false
	for {
		bp := packetBufs.Get().(*[]byte)
		n, err := readPacket(s.conn, &hdr, *bp)
		if err != nil {
			packetBufs.Put(bp)
			// Closed from this side (Close, or a failed WriteTo that
			// reported it): nothing to tell ReadFrom.
			ours := false
			select {
			case <-s.conn.Done():
				ours = true
			default:
			}
			pc.drop(s)
			if ours || got {
				return
			}
			select {
			case pc.in <- packet{err: fmt.Errorf("vless: udp to %s via %s: %w", s.dst, pc.client.addr, err)}:
			case <-pc.done:
			}
			return
		}
		got = true
		select {
		case pc.in <- packet{buf: bp, n: n, from: s.from}:
		case <-pc.done:
			packetBufs.Put(bp)
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
	select {
	case pk := <-pc.in:
		if pk.err != nil {
			return 0, nil, pk.err
		}
		n := copy(p, (*pk.buf)[:pk.n])
		packetBufs.Put(pk.buf)
		return n, pk.from, nil
	case <-pc.done:
		return 0, nil, net.ErrClosed
	case <-pc.rdl.wait():
		return 0, nil, os.ErrDeadlineExceeded
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
	pc.rdl.set(time.Time{})
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
	pc.rdl.set(t)
	return nil
}

// SetWriteDeadline sets the write deadline of every stream, present and
// future.
func (pc *packetConn) SetWriteDeadline(t time.Time) error {
	pc.mu.Lock()
	pc.wdl = t
	var conns []*reqconn.Conn
	for _, s := range pc.streams {
		if s.conn != nil {
			conns = append(conns, s.conn)
		}
	}
	pc.mu.Unlock()
	for _, c := range conns {
		c.SetWriteDeadline(t)
	}
	return nil
}

// deadline is a settable read deadline for a channel-based ReadFrom.
type deadline struct {
	mu    sync.Mutex
	ch    chan struct{} // closed when the deadline passes; nil: none
	timer *time.Timer
}

// wait returns a channel closed when the deadline passes (nil, which
// blocks forever, when there is none).
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if t.IsZero() {
		d.ch = nil
		return
	}
	ch := make(chan struct{})
	d.ch = ch
	if dur := time.Until(t); dur > 0 {
		d.timer = time.AfterFunc(dur, func() { close(ch) })
	} else {
		close(ch)
	}
}
