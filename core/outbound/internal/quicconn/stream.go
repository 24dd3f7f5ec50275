package quicconn

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// StreamConn is a TCP flow: one bidirectional QUIC stream as a net.Conn.
//
// Read gathers what a transfer brings: quic-go's Read returns what has
// arrived, which for a stream sharing the connection with others is a
// packet or two (1-3 KiB) per call, and a relay writes each to the app's
// socket in a system call of its own (in a 16-stream TUIC download, the
// writes to the app took 26 % of the client's CPU). So a Read that found
// data waiting (the stream is busy) but brought less than coalesceMin waits
// up to coalesceWait for more before it returns. A Read that had to wait
// for its data (an interactive flow) returns at once.
//
// coalesceWait is 1 ms: in the 16-stream TUIC download of test/cmd/bench
// (~10 MB/s per stream) 300 µs gathered 7.6 KiB per write to the app's
// socket (140,000 writes per GiB, 16 % of the client's CPU in write(2));
// 1 ms gathers 11-14 KiB (77,000-100,000 per GiB) and 2 ms no more. A
// busy flow's bytes wait at most that long, next to RTTs of tens of
// milliseconds.
//
// A relay waits for the next data on WaitRead (readwait.Waiter), which
// peeks at one byte: an idle stream then holds no read buffer, only the
// frames quic-go has queued.
//
// quic-go forbids closing a stream's sending side while a Write is in
// progress, which net.Conn allows, so Write and the closes are serialised:
// Close first makes a blocked Write return through the write deadline.
type StreamConn struct {
	*quic.Stream
	Local, Remote net.Addr

	wmu       sync.Mutex
	closeOnce sync.Once

	rdl atomic.Int64 // the caller's read deadline, Unix nanoseconds; 0 none

	// Only the reader's (WaitRead and Read, which never run at once):
	peek   [1]byte // WaitRead's
	waited bool    // the last WaitRead had to wait for data
}

// Read coalescing (see StreamConn).
const (
	coalesceMin  = 32 << 10
	coalesceWait = time.Millisecond
	// busyRead: a Read that returned sooner found its data waiting.
	busyRead = 50 * time.Microsecond
)

// Read reads from the stream, gathering a busy stream's data (see
// StreamConn).
func (c *StreamConn) Read(p []byte) (int, error) {
	start := time.Now()
	n, err := c.Stream.Read(p)
	waited := c.waited
	c.waited = false
	if err != nil || n >= coalesceMin || n == len(p) {
		return n, err
	}
	now := time.Now()
	if waited || now.Sub(start) > busyRead {
		return n, nil
	}
	until := now.Add(coalesceWait)
	rdl := c.readDeadline()
	if !rdl.IsZero() && rdl.Before(until) {
		until = rdl
	}
	c.Stream.SetReadDeadline(until)
	for n < coalesceMin && n < len(p) {
		m, err := c.Stream.Read(p[n:])
		n += m
		if err != nil {
			break // a deadline, or an error the next Read reports again
		}
	}
	c.Stream.SetReadDeadline(rdl)
	if r := c.readDeadline(); !r.Equal(rdl) {
		c.Stream.SetReadDeadline(r) // set meanwhile
	}
	return n, nil
}

// WaitRead waits until the next Read has data, the stream's end or an
// error to return, or the read deadline passes (readwait.Waiter). It peeks
// at one byte, which quic-go leaves queued, so a relay's idle direction
// holds no buffer while it waits. A wait that was not over at once makes
// the next Read return what it finds without gathering: the flow is
// interactive.
func (c *StreamConn) WaitRead() bool {
	start := time.Now()
	c.Stream.Peek(c.peek[:]) // an error shows again on the next Read
	c.waited = time.Since(start) > busyRead
	return true
}

func (c *StreamConn) readDeadline() time.Time {
	if ns := c.rdl.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (c *StreamConn) setRDL(t time.Time) {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	c.rdl.Store(ns)
}

// SetReadDeadline sets the read deadline.
func (c *StreamConn) SetReadDeadline(t time.Time) error {
	c.setRDL(t)
	return c.Stream.SetReadDeadline(t)
}

// SetDeadline sets the read and write deadlines.
func (c *StreamConn) SetDeadline(t time.Time) error {
	c.setRDL(t)
	return c.Stream.SetDeadline(t)
}

// NewStreamConn returns st as a net.Conn on qc.
func NewStreamConn(st *quic.Stream, qc *quic.Conn) *StreamConn {
	return &StreamConn{Stream: st, Local: qc.LocalAddr(), Remote: qc.RemoteAddr()}
}

// Write writes to the stream.
func (c *StreamConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.Stream.Write(p)
}

// Close ends both directions: data written so far is still delivered,
// then the stream ends; what the server sends afterwards is refused.
func (c *StreamConn) Close() error {
	c.closeOnce.Do(func() {
		c.Stream.CancelRead(0)
		c.Stream.SetWriteDeadline(time.Unix(1, 0))
		c.wmu.Lock()
		c.Stream.Close()
		c.wmu.Unlock()
	})
	return nil
}

// CloseWrite closes the sending direction only (a TCP half close).
func (c *StreamConn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.Stream.Close()
}

// LocalAddr returns the QUIC connection's local address.
func (c *StreamConn) LocalAddr() net.Addr { return c.Local }

// RemoteAddr returns the server's address.
func (c *StreamConn) RemoteAddr() net.Addr { return c.Remote }

// Deadline is a settable point in time with a channel closed when it
// passes, for select.
type Deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{} // closed when the deadline passes
}

// MakeDeadline returns a disarmed Deadline.
func MakeDeadline() Deadline { return Deadline{cancel: make(chan struct{})} }

// Set arms the deadline at t; the zero time disarms it.
func (d *Deadline) Set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired and closed it
	}
	d.timer = nil
	closed := isClosed(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		ch := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

// Wait returns a channel that is closed when the deadline passes.
func (d *Deadline) Wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// StallTimeoutMin is the least time a stream request may go without any
// packet from the server before the connection is judged dead.
const StallTimeoutMin = 2 * time.Second

// StallTimeout is how long a stream request may go without any packet from
// the server: the server acknowledges a request within an RTT or so.
func StallTimeout(qc *quic.Conn) time.Duration {
	s := qc.ConnectionStats()
	return max(StallTimeoutMin, 4*(s.SmoothedRTT+4*s.MeanDeviation))
}
