// Package reqconn is the stream of the proxy protocols whose request
// header goes out with the flow's first bytes and whose data then flows
// unchanged (VLESS, Trojan): the header rides in the same TLS record (and
// in WebSocket early data) as the app's first bytes, which saves a packet
// and, with early data, a round trip. A protocol with a response header
// (VLESS) has it read before the first Read returns data.
package reqconn

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// FirstWriteWait is how long a Read that comes before any Write waits for
// one before sending the request header alone. Relays start reading at
// once; the app's first bytes usually follow within microseconds.
// Server-first protocols pay this delay once.
const FirstWriteWait = 100 * time.Millisecond

// WaitFirstWrite is that wait, for this package's Conn and for the
// streams of its kind that frame their data (VMess, Shadowsocks): it
// returns once sent (the request went out) or closed (the stream) is
// closed, or FirstWriteWait has passed.
func WaitFirstWrite(sent, closed <-chan struct{}) {
	t := time.NewTimer(FirstWriteWait)
	select {
	case <-sent:
	case <-closed:
	case <-t.C:
	}
	t.Stop()
}

// Conn is one stream.
type Conn struct {
	net.Conn // the transport: TCP, TLS, WebSocket or HTTP/2
	proto    string
	addr     string
	response func(io.Reader) error // nil: the protocol has no response
	onClose  func()

	reqMu   sync.Mutex
	reqSent atomic.Bool
	req     []byte        // the request header until it is sent
	sent    chan struct{} // closed once the request is sent (or failed)
	reqErr  error

	respMu   sync.Mutex
	respDone atomic.Bool
	respErr  error
	readers  readwait.Lazy // Conn's, once WaitRead or TryRead needs them; the reader's own

	closeOnce sync.Once
	closed    chan struct{}
}

// New returns the stream over tr whose first write carries req. proto and
// addr (the server) name the errors; response, when not nil, reads and
// checks the server's response header; onClose runs once when the stream
// is closed.
func New(tr net.Conn, req []byte, proto, addr string, response func(io.Reader) error, onClose func()) *Conn {
	return &Conn{Conn: tr, proto: proto, addr: addr, response: response, onClose: onClose, req: req,
		sent: make(chan struct{}), closed: make(chan struct{})}
}

// Done is closed when the stream is closed from this side.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Write writes p; the first Write carries the request header in front of
// p, in one write to the transport.
func (c *Conn) Write(p []byte) (int, error) {
	if c.reqSent.Load() {
		return c.Conn.Write(p)
	}
	return c.writeRequest(p)
}

// frameWriter is a transport that can frame a write in the caller's buffer
// (ws.Conn; relay.FrameWriter).
type frameWriter interface {
	FrontHeadroom() int
	WriteFrame(b []byte) (int, error)
}

// FrontHeadroom is the transport's headroom for WriteFrame, 0 when it has
// none (TCP, TLS).
func (c *Conn) FrontHeadroom() int {
	if fw, ok := c.Conn.(frameWriter); ok {
		return fw.FrontHeadroom()
	}
	return 0
}

// WriteFrame writes b[c.FrontHeadroom():] as Write would, letting the
// transport build its frame in b once the request header has gone.
func (c *Conn) WriteFrame(b []byte) (int, error) {
	fw, ok := c.Conn.(frameWriter)
	if !ok {
		return c.Write(b)
	}
	if !c.reqSent.Load() {
		return c.Write(b[fw.FrontHeadroom():])
	}
	return fw.WriteFrame(b)
}

// writeRequest sends the request header followed by p, unless another
// call did already; then it writes p alone (nothing for a nil p).
func (c *Conn) writeRequest(p []byte) (int, error) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	if c.reqSent.Load() {
		if c.reqErr != nil {
			return 0, c.reqErr
		}
		if p == nil {
			return 0, nil // from Read: a Write sent the request meanwhile
		}
		return c.Conn.Write(p)
	}
	hdr := len(c.req)
	buf := append(c.req, p...)
	n, err := c.Conn.Write(buf)
	c.req = nil
	if err != nil {
		c.reqErr = fmt.Errorf("%s: request to %s: %w", c.proto, c.addr, err)
		err = c.reqErr
	}
	c.reqSent.Store(true)
	close(c.sent)
	return max(n-hdr, 0), err
}

// tryReader is a transport that reads what is there without waiting
// (tlsconf.Conn).
type tryReader interface {
	TryRead(p []byte) (int, error)
}

// Read reads the response header first when the protocol has one (sending
// the request header alone if no Write came within FirstWriteWait), then
// data: what the first read brings and, over TLS, what has already
// arrived besides, so that a relay writes up to its whole buffer to the
// app at once rather than one TLS record (16 KiB) per system call.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.respDone.Load() {
		if err := c.readResponse(); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Read(p)
	if tr, ok := c.Conn.(tryReader); ok && err == nil {
		for n < len(p) {
			m, terr := tr.TryRead(p[n:])
			n += m
			if m == 0 || terr != nil {
				break // a TryRead error shows again on the next Read
			}
		}
	}
	return n, err
}

// TryRead reads what Read would, but only what the transport has at once,
// (0, nil) when it has nothing (readwait.TryReader); before the response
// header is in it reads nothing.
func (c *Conn) TryRead(p []byte) (int, error) {
	if !c.respDone.Load() || c.respErr != nil {
		return 0, nil
	}
	_, tr := c.readers.Of(c.Conn)
	if tr == nil {
		return 0, nil
	}
	// Over TLS each TryRead brings at most a record: go on to fill p, as
	// Read does. A socket's brings all it has at once.
	_, gather := c.Conn.(tryReader)
	n := 0
	for n < len(p) {
		m, err := tr.TryRead(p[n:])
		n += m
		if err != nil && n == 0 {
			return 0, err
		}
		if m == 0 || err != nil || !gather {
			break // an error after data shows again on the next Read
		}
	}
	return n, nil
}

// WaitRead waits for data on the transport once the response header is
// in (readwait.Waiter); before that it cannot wait.
func (c *Conn) WaitRead() bool {
	if !c.respDone.Load() || c.respErr != nil {
		return false
	}
	rw, _ := c.readers.Of(c.Conn)
	if rw == nil {
		return false
	}
	return rw.WaitRead()
}

func (c *Conn) readResponse() error {
	c.respMu.Lock()
	defer c.respMu.Unlock()
	if c.respDone.Load() {
		return c.respErr
	}
	if !c.reqSent.Load() {
		WaitFirstWrite(c.sent, c.closed)
		if _, err := c.writeRequest(nil); err != nil {
			c.respErr = err
			c.respDone.Store(true)
			return err
		}
	} else if c.reqErr != nil {
		c.respErr = c.reqErr
		c.respDone.Store(true)
		return c.respErr
	}
	if c.response != nil {
		if err := c.response(c.Conn); err != nil {
			// A server that does not know the user closes the
			// stream without a word: this is where that shows.
			c.respErr = fmt.Errorf("%s: response from %s: %w", c.proto, c.addr, err)
		}
	}
	c.respDone.Store(true)
	return c.respErr
}

// CloseWrite ends the stream's sending half, so that the server passes
// the EOF on to the destination (the app closed, or half-closed, its
// side): through the transport's CloseWrite, after the request header if
// no Write sent it yet. A transport without one (WebSocket, Vision's
// stream) cannot: it returns errors.ErrUnsupported, and the relay treats
// the stream as one without CloseWrite. Without this, every flow of the
// protocols on reqconn ended only relay.HalfCloseIdle (2 s) after the
// app had closed, as the server never learnt of the close.
func (c *Conn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errors.ErrUnsupported
	}
	if !c.reqSent.Load() {
		if _, err := c.writeRequest(nil); err != nil {
			return err
		}
	}
	return cw.CloseWrite()
}

// SoftCloseWrite reports that CloseWrite may be a marker the server
// ignores (relay.SoftCloser): over TLS it is a close_notify, and the TCP
// side stays open. The relay then reads the reply under an idle limit.
func (c *Conn) SoftCloseWrite() bool {
	_, tcp := c.Conn.(*net.TCPConn)
	return !tcp
}

// Close closes the stream.
func (c *Conn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.Conn.Close()
		if c.onClose != nil {
			c.onClose()
		}
	})
	return err
}
