// Package h2 is the V2Ray "http" transport over TLS (Xray's h2, sing-box's
// http): each proxy stream is one HTTP/2 request, its body carrying the
// client's bytes and the response body the server's, so that many streams
// share one TLS connection. It is a small HTTP/2 client of its own on
// golang.org/x/net/http2's Framer and hpack: one reader goroutine per
// connection, none per stream, and received bytes kept in pooled chunks
// only while unread, so that idle streams hold next to nothing.
package h2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"
)

// Config is what each request says.
type Config struct {
	Host    string            // the :authority (required)
	Path    string            // empty: "/"
	Method  string            // empty: PUT, as V2Ray and sing-box use
	Headers map[string]string // extra request headers
	Scheme  string            // empty: https; http for prior-knowledge h2c
	// Check, when set, sees the fields of the response headers and
	// trailers; end is set on the block that ends the stream. Its error
	// fails the stream: Dial, or Read after the bytes before it.
	Check func(fields []hpack.HeaderField, end bool) error
	// NoWait makes Dial return once the request is sent, not when the
	// response headers come: servers that answer only with their first
	// bytes (sing-box's and Xray's gRPC) wait for the client's. Read then
	// waits for them and returns a refusal.
	NoWait bool
}

// StatusError is a response other than 200.
type StatusError struct {
	Target string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("h2: request to %s: server answered %d", e.Target, e.Status)
}

// Receive flow control: the streams of one client share rxBudget bytes of
// receive window, each between minStreamWindow and maxStreamWindow. 1 MiB
// is what Go's HTTP/2 server allows a client's request body, so each
// direction has the same limit of one window per round trip.
const (
	rxBudget        = 32 << 20
	minStreamWindow = 65535
	maxStreamWindow = 1 << 20
	connWindow      = 1 << 30 // the connection's: streams bound it anyway
)

// Keepalive: a connection silent for idleTimeout is pinged, and closed if
// no answer comes within pingTimeout.
const (
	idleTimeout = 30 * time.Second
	pingTimeout = 15 * time.Second
)

// Client opens streams as requests on shared HTTP/2 connections.
type Client struct {
	cfg    Config
	path   string
	target string // host+path, for errors
	dial   func(ctx context.Context) (net.Conn, error)

	idle, ping time.Duration // keepalive, variables for tests

	mu      sync.Mutex
	conns   []*hconn
	dialing chan struct{} // closed when the dial in progress ends; nil: none
	dialErr error
	open    int // streams open on all connections
	closed  bool
}

// New returns a client whose connections come from dial, which must
// return a TLS connection that negotiated h2.
func New(cfg Config, dial func(ctx context.Context) (net.Conn, error)) (*Client, error) {
	if cfg.Host == "" {
		return nil, errors.New("h2: no host")
	}
	path := cfg.Path
	if path == "" {
		path = "/"
	} else if path[0] != '/' {
		path = "/" + path
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodPut
	}
	if cfg.Scheme == "" {
		cfg.Scheme = "https"
	}
	return &Client{cfg: cfg, path: path, target: cfg.Host + path, dial: dial, idle: idleTimeout, ping: pingTimeout}, nil
}

// Host is the :authority the requests carry.
func (c *Client) Host() string { return c.cfg.Host }

// streamWindow is the receive window a stream keeps open now.
func (c *Client) streamWindow() int {
	c.mu.Lock()
	n := c.open
	c.mu.Unlock()
	return min(max(rxBudget/max(n, 1), minStreamWindow), maxStreamWindow)
}

// Dial opens one stream: it sends the request and returns once the
// server's response headers arrived (bounded by ctx). The stream lives on
// after ctx, until Close.
func (c *Client) Dial(ctx context.Context) (net.Conn, error) {
	for tries := 0; ; tries++ {
		hc, err := c.getConn(ctx)
		if err != nil {
			return nil, fmt.Errorf("h2: request to %s: %w", c.target, err)
		}
		s, err := hc.newStream(ctx)
		// A stream the server refused (one more than it allows before its
		// SETTINGS came, or past a GOAWAY) was not processed: try again.
		if errors.Is(err, errRefused) && tries < maxRefused {
			continue
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

var errRefused = errors.New("h2: stream refused by the server")

// maxRefused bounds Dial's retries of refused streams.
const maxRefused = 5

// getConn returns a connection with room for a stream, dialling one if
// none has; one dial at a time.
func (c *Client) getConn(ctx context.Context) (*hconn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errors.New("client closed")
		}
		for _, hc := range c.conns {
			if hc.reserve() {
				c.mu.Unlock()
				return hc, nil
			}
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		c.dialing = ch
		c.mu.Unlock()

		hc, err := c.newConn(ctx)
		c.mu.Lock()
		c.dialing = nil
		close(ch)
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if c.closed {
			c.mu.Unlock()
			hc.close(errors.New("client closed"))
			return nil, errors.New("client closed")
		}
		c.conns = append(c.conns, hc)
		c.mu.Unlock()
	}
}

// newConn dials and starts a connection, honouring ctx.
func (c *Client) newConn(ctx context.Context) (*hconn, error) {
	nc, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	// The preface and settings are written before Dial waits for
	// anything else: a server not reading must not hold it past ctx.
	stop := context.AfterFunc(ctx, func() { nc.SetWriteDeadline(time.Unix(1, 0)) })
	hc, err := startConn(c, nc)
	if !stop() {
		err = ctx.Err()
	}
	if err != nil {
		if hc != nil {
			hc.close(err)
		}
		nc.Close()
		return nil, err
	}
	return hc, nil
}

// removeConn drops a connection that can take no more streams.
func (c *Client) removeConn(hc *hconn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.conns {
		if x == hc {
			c.conns = append(c.conns[:i], c.conns[i+1:]...)
			return
		}
	}
}

func (c *Client) addOpen(d int) {
	c.mu.Lock()
	c.open += d
	c.mu.Unlock()
}

// Close closes the client's idle connections at once and the busy ones
// as their last stream ends; it dials no more.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for _, hc := range conns {
		hc.drain()
	}
}
