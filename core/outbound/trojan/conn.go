package trojan

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// firstWriteWait is how long a Read that comes before any Write waits for
// one before sending the request header alone. Relays start reading at
// once; the app's first bytes usually follow within microseconds, and
// carrying them with the header (in one TLS record, and in WebSocket early
// data) saves a packet and, with early data, a round trip. Server-first
// protocols pay this delay once.
const firstWriteWait = 100 * time.Millisecond

// conn is one Trojan stream. The request header goes out with the first
// Write; Trojan has no response, so reads go straight to the transport
// once the header is out.
type conn struct {
	net.Conn // the transport: TCP, TLS or WebSocket
	client   *Client

	mu      sync.Mutex
	reqSent atomic.Bool
	req     []byte        // the request header until it is sent
	sent    chan struct{} // closed once the request is sent (or failed)
	reqErr  error

	closeOnce sync.Once
	closed    chan struct{}
}

func newConn(tr net.Conn, c *Client, req []byte) *conn {
	return &conn{Conn: tr, client: c, req: req, sent: make(chan struct{}), closed: make(chan struct{})}
}

// Write writes p; the first Write carries the request header in front of
// p, in one write to the transport.
func (c *conn) Write(p []byte) (int, error) {
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
func (c *conn) FrontHeadroom() int {
	if fw, ok := c.Conn.(frameWriter); ok {
		return fw.FrontHeadroom()
	}
	return 0
}

// WriteFrame writes b[c.FrontHeadroom():] as Write would, letting the
// transport build its frame in b once the request header has gone.
func (c *conn) WriteFrame(b []byte) (int, error) {
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
func (c *conn) writeRequest(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reqSent.Load() {
		if c.reqErr != nil {
			return 0, c.reqErr
		}
		if p == nil {
			return 0, nil
		}
		return c.Conn.Write(p)
	}
	hdr := len(c.req)
	buf := append(c.req, p...)
	n, err := c.Conn.Write(buf)
	c.req = nil
	if err != nil {
		c.reqErr = fmt.Errorf("trojan: request to %s: %w", c.client.stack.Addr(), err)
		err = c.reqErr
	}
	c.reqSent.Store(true)
	close(c.sent)
	return max(n-hdr, 0), err
}

// Read reads from the server, first sending the request header alone if
// no Write came within firstWriteWait.
func (c *conn) Read(p []byte) (int, error) {
	if !c.reqSent.Load() {
		t := time.NewTimer(firstWriteWait)
		select {
		case <-c.sent:
		case <-c.closed:
		case <-t.C:
		}
		t.Stop()
		if _, err := c.writeRequest(nil); err != nil {
			return 0, err
		}
	} else if c.reqErr != nil {
		return 0, c.reqErr
	}
	n, err := c.Conn.Read(p)
	if tr, ok := c.Conn.(tryReader); ok && err == nil {
		// Go on with what has already arrived: the relay then writes
		// up to its whole buffer to the app at once, not one TLS record
		// (16 KiB) per system call.
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

// tryReader is a transport that reads what is there without waiting
// (tlsconf.Conn).
type tryReader interface {
	TryRead(p []byte) (int, error)
}

// Close closes the stream.
func (c *conn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.Conn.Close()
		c.client.untrack(c)
	})
	return err
}
