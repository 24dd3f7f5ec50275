package vless

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// firstWriteWait is how long a Read that comes before any Write waits for
// one before sending the request header alone. Relays start reading at once;
// the app's first bytes usually follow within microseconds, and carrying
// them with the header (and in WebSocket early data) saves a round trip.
// Server-first protocols pay this delay once.
const firstWriteWait = 100 * time.Millisecond

// conn is one VLESS stream. The request header goes out with the first
// Write; the response header is read before the first Read returns data.
// After that, reads and writes go straight to the transport.
type conn struct {
	net.Conn // the transport: TCP, TLS or WebSocket
	client   *Client

	reqMu   sync.Mutex
	reqSent atomic.Bool
	req     []byte        // the request header until it is sent
	sent    chan struct{} // closed once the request is sent (or failed)
	reqErr  error

	respMu   sync.Mutex
	respDone atomic.Bool
	respErr  error

	closeOnce sync.Once
	closed    chan struct{}
}

func newConn(tr net.Conn, c *Client, req []byte) *conn {
	return &conn{Conn: tr, client: c, req: req, sent: make(chan struct{}), closed: make(chan struct{})}
}

// Write writes p; the first Write carries the request header in front of p,
// in one write to the transport (one WebSocket message).
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

// writeRequest sends the request header followed by p, unless another call
// did already; then it writes p alone.
func (c *conn) writeRequest(p []byte) (int, error) {
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
		c.reqErr = fmt.Errorf("vless: request to %s: %w", c.client.addr, err)
		err = c.reqErr
	}
	c.reqSent.Store(true)
	close(c.sent)
	return max(n-hdr, 0), err
}

// Read reads the response header first (sending the request header alone if
// no Write came within firstWriteWait), then data.
func (c *conn) Read(p []byte) (int, error) {
	if !c.respDone.Load() {
		if err := c.readResponse(); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

func (c *conn) readResponse() error {
	c.respMu.Lock()
	defer c.respMu.Unlock()
	if c.respDone.Load() {
		return c.respErr
	}
	if !c.reqSent.Load() {
		t := time.NewTimer(firstWriteWait)
		select {
		case <-c.sent:
		case <-c.closed:
		case <-t.C:
		}
		t.Stop()
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
	if err := readResponse(c.Conn); err != nil {
		// A server that does not know the user closes the stream
		// without a word: this is where a wrong UUID shows.
		c.respErr = fmt.Errorf("vless: response from %s: %w", c.client.addr, err)
	}
	c.respDone.Store(true)
	return c.respErr
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
