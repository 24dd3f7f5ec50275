// Package udpstreams carries a UDP session as one proxy stream per
// destination, the way VLESS and VMess send UDP (command UDP): the first
// datagram to a destination dials its stream, every stream has a reader
// that hands its datagrams to ReadFrom with that destination as the
// source, and a stream that ends is dialed again by the next WriteTo.
// Each protocol brings its dial and its framing (Stream).
package udpstreams

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound"
)

// dialTimeout bounds dialing a stream from WriteTo, which has no context of
// its own.
const dialTimeout = 15 * time.Second

// MaxDatagram is the largest datagram a Stream may return (a u16 length).
const MaxDatagram = 0xffff

// bufs hold received datagrams on their way to ReadFrom.
var bufs = sync.Pool{New: func() any { b := make([]byte, MaxDatagram); return &b }}

// Stream is one destination's stream, framing datagrams its protocol's way.
type Stream interface {
	WriteDatagram(p []byte) error
	// ReadDatagram reads the next datagram into p (MaxDatagram bytes).
	ReadDatagram(p []byte) (int, error)
	SetWriteDeadline(t time.Time) error
	Close() error
	// Done is closed once Close was called: the stream's end is this side's.
	Done() <-chan struct{}
}

// Config is what a session needs from its protocol.
type Config struct {
	Proto  string // "vless", for errors and the reader's name
	Server string // the server's address, for errors
	// MaxWrite is the largest datagram WriteTo takes.
	MaxWrite int
	// Dial opens the stream to dst.
	Dial func(ctx context.Context, dst flow.Addr) (Stream, error)
	// ReadAfterWrite starts a stream's reader after its first datagram
	// went out instead of once it is dialed (VLESS: the request, and so
	// the server's answer, goes with the first write).
	ReadAfterWrite bool
	// OnClose runs at the end of Close (the client forgets the session).
	OnClose func(*Conn)
}

// packet is a received datagram (or a stream's failure) on its way from a
// stream's reader to ReadFrom.
type packet struct {
	buf  *[]byte
	n    int
	from net.Addr
	err  error
}

// Conn is a UDP session: a net.PacketConn over one stream per destination.
type Conn struct {
	cfg    Config
	ctx    context.Context // for dialing streams from WriteTo, with the flow's panic reporter; ends on Close
	cancel context.CancelFunc
	in     chan packet
	done   chan struct{}
	wg     sync.WaitGroup // stream readers

	mu      sync.Mutex
	streams map[flow.Addr]*stream
	closed  bool
	wdl     time.Time // write deadline, applied to every stream

	rdl deadline
}

// stream is the stream to one destination.
type stream struct {
	dst   flow.Addr
	from  net.Addr      // dst, boxed once so ReadFrom does not allocate
	ready chan struct{} // closed when dialing ended
	conn  Stream        // set when dialing succeeded
	err   error         // set when dialing failed
	start sync.Once     // starts the reader (ReadAfterWrite)
}

// New returns a session; the flow's ctx lends it the panic reporter that
// its stream readers report to (see package guard).
func New(flowCtx context.Context, cfg Config) *Conn {
	ctx, cancel := context.WithCancel(guard.WithReporter(context.Background(), guard.FromContext(flowCtx)))
	return &Conn{
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		in:      make(chan packet, 32),
		done:    make(chan struct{}),
		streams: map[flow.Addr]*stream{},
	}
}

// Listen returns a session opened toward its first destination dst, as a
// client's ListenPacket hands one out: recorded in flows (nil: in none)
// until it closes, and closed again when the stream to dst cannot be
// dialed. cfg.OnClose is set for flows.
func Listen(flowCtx context.Context, cfg Config, dst flow.Addr, flows *outbound.Flows) (net.PacketConn, error) {
	if flows != nil {
		cfg.OnClose = func(pc *Conn) { flows.Remove(pc) }
	}
	pc := New(flowCtx, cfg)
	if flows != nil {
		if err := flows.Keep(pc, cfg.Proto, cfg.Server); err != nil {
			return nil, err
		}
	}
	if err := pc.Open(flowCtx, dst); err != nil {
		pc.Close()
		return nil, err
	}
	return pc, nil
}

// Open returns once the stream to dst is dialed, dialing it with ctx if
// there is none.
func (pc *Conn) Open(ctx context.Context, dst flow.Addr) error {
	_, err := pc.stream(ctx, dst)
	return err
}

// Has reports whether a stream to dst is open or being dialed.
func (pc *Conn) Has(dst flow.Addr) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	_, ok := pc.streams[dst]
	return ok
}

// stream returns the stream to dst, dialing it with ctx if there is none.
func (pc *Conn) stream(ctx context.Context, dst flow.Addr) (*stream, error) {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return nil, net.ErrClosed
	}
	s, ok := pc.streams[dst]
	if !ok {
		s = &stream{dst: dst, from: dst, ready: make(chan struct{})}
		pc.streams[dst] = s
	}
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
	conn, err := pc.cfg.Dial(ctx, dst)
	pc.mu.Lock()
	switch {
	case err != nil:
		s.err = err
		delete(pc.streams, dst) // the next WriteTo dials again
	case pc.closed:
		conn.Close()
		s.err = net.ErrClosed
	default:
		conn.SetWriteDeadline(pc.wdl)
		s.conn = conn
		if !pc.cfg.ReadAfterWrite {
			pc.wg.Add(1)
			go pc.readLoop(s)
		}
	}
	pc.mu.Unlock()
	close(s.ready)
	return s, s.err
}

// WriteTo sends p to addr (a flow.Addr or *net.UDPAddr) on the stream to
// that destination, dialing it if needed.
func (pc *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("%s: udp via %s: %w", pc.cfg.Proto, pc.cfg.Server, err)
	}
	if len(p) > pc.cfg.MaxWrite {
		return 0, fmt.Errorf("%s: udp via %s: datagram of %d bytes, at most %d", pc.cfg.Proto, pc.cfg.Server, len(p), pc.cfg.MaxWrite)
	}
	s, err := pc.streamForWrite(dst)
	if err != nil {
		return 0, err
	}
	if err := s.conn.WriteDatagram(p); err != nil {
		pc.drop(s)
		return 0, err
	}
	if pc.cfg.ReadAfterWrite {
		s.start.Do(func() {
			pc.mu.Lock()
			defer pc.mu.Unlock()
			if !pc.closed { // Close is not waiting yet: it may count on this reader
				pc.wg.Add(1)
				go pc.readLoop(s)
			}
		})
	}
	return len(p), nil
}

// streamForWrite returns the stream to dst; an existing one without waiting
// on the map lock for long.
func (pc *Conn) streamForWrite(dst flow.Addr) (*stream, error) {
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
	ctx, cancel := context.WithTimeout(pc.ctx, dialTimeout)
	defer cancel()
	return pc.stream(ctx, dst)
}

// readLoop delivers the datagrams of s to ReadFrom until s fails or the
// session closes. A stream that fails before its first datagram reports
// the error to ReadFrom (that is how a refused user shows); one that ends
// later is dropped quietly and dialed again on the next WriteTo.
func (pc *Conn) readLoop(s *stream) {
	defer pc.wg.Done()
	if err := guard.Do(pc.ctx, pc.cfg.Proto+" udp reader", func() error { pc.read(s); return nil }); err != nil {
		pc.drop(s)
		pc.fail(s, err)
	}
}

// fail reports s's failure to ReadFrom.
func (pc *Conn) fail(s *stream, err error) {
	select {
	case pc.in <- packet{err: fmt.Errorf("%s: udp to %s via %s: %w", pc.cfg.Proto, s.dst, pc.cfg.Server, err)}:
	case <-pc.done:
	}
}

// read delivers s's datagrams until s ends.
func (pc *Conn) read(s *stream) {
	got := false
	for {
		bp := bufs.Get().(*[]byte)
		n, err := s.conn.ReadDatagram(*bp)
		if err != nil {
			bufs.Put(bp)
			// Closed from this side (Close, or a failed WriteTo that
			// reported it): nothing to tell ReadFrom.
			ours := false
			select {
			case <-s.conn.Done():
				ours = true
			default:
			}
			pc.drop(s)
			if !ours && !got {
				pc.fail(s, err)
			}
			return
		}
		got = true
		select {
		case pc.in <- packet{buf: bp, n: n, from: s.from}:
		case <-pc.done:
			bufs.Put(bp)
			return
		}
	}
}

// drop closes s and forgets it, so that the next WriteTo dials again.
func (pc *Conn) drop(s *stream) {
	pc.mu.Lock()
	if pc.streams[s.dst] == s {
		delete(pc.streams, s.dst)
	}
	pc.mu.Unlock()
	s.conn.Close()
}

// ReadFrom returns the next datagram from any destination, with that
// destination (a flow.Addr) as its source.
func (pc *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case pk := <-pc.in:
		if pk.err != nil {
			return 0, nil, pk.err
		}
		n := copy(p, (*pk.buf)[:pk.n])
		bufs.Put(pk.buf)
		return n, pk.from, nil
	case <-pc.done:
		return 0, nil, net.ErrClosed
	case <-pc.rdl.wait():
		return 0, nil, os.ErrDeadlineExceeded
	}
}

// Close closes every stream and ends the readers.
func (pc *Conn) Close() error {
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
	if pc.cfg.OnClose != nil {
		pc.cfg.OnClose(pc)
	}
	return nil
}

// LocalAddr returns an unspecified UDP address: datagrams leave through
// streams, each with its own local TCP address.
func (pc *Conn) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4zero} }

// SetDeadline sets the read and write deadlines.
func (pc *Conn) SetDeadline(t time.Time) error {
	pc.SetReadDeadline(t)
	return pc.SetWriteDeadline(t)
}

// SetReadDeadline makes ReadFrom fail with os.ErrDeadlineExceeded at t.
func (pc *Conn) SetReadDeadline(t time.Time) error {
	pc.rdl.set(t)
	return nil
}

// SetWriteDeadline sets the write deadline of every stream, present and
// future.
func (pc *Conn) SetWriteDeadline(t time.Time) error {
	pc.mu.Lock()
	pc.wdl = t
	var conns []Stream
	for _, s := range pc.streams {
		select {
		case <-s.ready:
			if s.conn != nil {
				conns = append(conns, s.conn)
			}
		default: // still dialing: stream() applies wdl when it ends
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
