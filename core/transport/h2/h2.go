// Package h2 is the V2Ray "http" transport over TLS (Xray's h2, sing-box's
// http): each proxy stream is one HTTP/2 request, its body carrying the
// client's bytes and the response body the server's, so that many streams
// share one TLS connection. The HTTP/2 framing is golang.org/x/net/http2's
// client; this package only makes a request into a net.Conn.
package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Config is what each request says.
type Config struct {
	Host    string            // the :authority (required)
	Path    string            // empty: "/"
	Method  string            // empty: PUT, as V2Ray and sing-box use
	Headers map[string]string // extra request headers
}

// Client opens streams as requests on shared HTTP/2 connections.
type Client struct {
	cfg    Config
	url    *url.URL
	target string // host+path, for errors
	tr     *http2.Transport
	open   atomic.Int64 // streams dialled and not closed, for reqBody
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
	u, err := url.Parse("https://" + cfg.Host + path)
	if err != nil {
		return nil, fmt.Errorf("h2: request URL for %s: %w", cfg.Host, err)
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodPut
	}
	// The receive windows can only be set through net/http's HTTP2Config,
	// which the HTTP/2 transport reads from the HTTP/1 one it configures;
	// that one never carries a request. Its connection pool only takes
	// connections handed over by the HTTP/1 one: without it (nil), the
	// transport dials its own, with DialTLSContext.
	tr, err := http2.ConfigureTransports(&http.Transport{HTTP2: &http.HTTP2Config{
		MaxReceiveBufferPerStream: streamWindow,
	}})
	if err != nil {
		return nil, fmt.Errorf("h2: %w", err)
	}
	tr.ConnPool = nil
	tr.DialTLSContext = func(ctx context.Context, _, _ string, _ *tls.Config) (net.Conn, error) {
		return dial(ctx)
	}
	tr.ReadIdleTimeout = 30 * time.Second // ping a silent connection, drop a dead one
	tr.PingTimeout = 15 * time.Second
	return &Client{cfg: cfg, url: u, target: cfg.Host + path, tr: tr}, nil
}

// streamWindow is how much of one stream's response the server may send
// before the stream is read (its flow-control window), and so how much
// the stream can hold unread: the server fills it whenever the reader
// falls behind (a busy CPU, a slow app), and all streams share one
// connection. x/net's 4 MiB held 58 of the 86 MiB of 16 busy streams.
// 1 MiB is what Go's HTTP/2 server (V2Ray's, Xray's and sing-box's)
// allows a client's request body, so each direction of a stream now has
// the same limit of one window per round trip: 42 Mbit/s at 200 ms, 84
// at 100 ms. The connection's window stays x/net's 1 GiB: it comes back
// only as streams are read, so a smaller one would let a few unread
// streams stop all the others.
const streamWindow = 1 << 20

// Dial opens one stream: it sends the request and returns once the
// server's response headers arrived (bounded by ctx). The stream lives on
// after ctx, until Close.
func (c *Client) Dial(ctx context.Context) (net.Conn, error) {
	sctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	body := &reqBody{pr: pr, open: &c.open}
	h := http.Header{}
	for k, v := range c.cfg.Headers {
		h.Set(k, v)
	}
	req := (&http.Request{Method: c.cfg.Method, URL: c.url, Host: c.cfg.Host, Header: h, Body: body, ContentLength: -1,
		Proto: "HTTP/2.0", ProtoMajor: 2}).WithContext(sctx)
	stop := context.AfterFunc(ctx, cancel)
	resp, err := c.tr.RoundTrip(req)
	stop()
	if err != nil {
		cancel()
		pw.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("h2: request to %s: %w", c.target, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		pw.Close()
		return nil, fmt.Errorf("h2: request to %s: server answered %d", c.target, resp.StatusCode)
	}
	c.open.Add(1)
	return &conn{w: pw, body: resp.Body, cancel: cancel, open: &c.open}, nil
}

// Request-body reads share a budget of bodyReadBudget bytes among the
// open streams, and each read is cut to its stream's share, never below
// minBodyRead. x/net's writer reads the body into a scratch buffer it
// keeps for the request's life, as large as the server's frame size
// allows (512 KiB from Go's HTTP/2 servers: V2Ray's, Xray's, sing-box's),
// and every page a read filled stays resident while the stream is idle:
// the relay's 60 KiB writes left 500 held VMess-H2 streams 30 MiB of them.
// Up to 64 streams the share is above those writes, so reads are as
// before; 500 streams read up to 8 KiB at a time, sharing the CPU anyway.
// A 1 MiB budget (60 KiB reads only up to 16 streams, 4 KiB at 500) was
// tried: 500 held streams 31.7-34.3 MiB against 35.5-35.8, but the burst
// took 3.4 CPU-seconds against 2.1-2.8 (a DATA frame and a flush per 4
// KiB), so it was not kept.
//
// What else each held stream keeps in x/net (500 streams, 2 connections):
// the last 16 KiB chunk of its response buffer, which x/net frees only
// once it is filled and read to its end (~8 MiB); the writer goroutine
// parked in reqBody.Read; its clientStream, Response and channels. Only a
// client of our own on x/net's Framer would drop them.
const (
	bodyReadBudget = 4 << 20
	minBodyRead    = 4 << 10
)

// reqBody is a request body: the pipe Write feeds, its reads cut to the
// stream's share of bodyReadBudget.
type reqBody struct {
	pr   *io.PipeReader
	open *atomic.Int64
}

func (b *reqBody) Read(p []byte) (int, error) {
	if n := max(bodyReadBudget/max(int(b.open.Load()), 1), minBodyRead); len(p) > n {
		p = p[:n]
	}
	return b.pr.Read(p)
}

func (b *reqBody) Close() error { return b.pr.Close() }

// Host is the :authority the requests carry.
func (c *Client) Host() string { return c.cfg.Host }

// Close closes the client's connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// conn is one request as a byte stream.
type conn struct {
	w      *io.PipeWriter // the request body
	body   io.ReadCloser  // the response body
	cancel context.CancelFunc
	open   *atomic.Int64 // the client's count of open streams

	// A byte WaitRead read ahead, and what its read returned: Read and
	// WaitRead never run at once, so they need no lock.
	peek    [1]byte
	peeked  bool
	peekErr error

	closeOnce sync.Once
	mu        sync.Mutex
	rt, wt    *time.Timer
	expired   atomic.Bool // a deadline passed: the stream was cancelled
}

func (c *conn) Read(p []byte) (int, error) {
	var (
		n   int
		err error
	)
	switch {
	case len(p) == 0:
		return 0, nil
	case c.peeked || c.peekErr != nil:
		// Only the byte: the rest may not be there yet, and this Read
		// must not wait for it with a byte in hand.
		if c.peeked {
			p[0], c.peeked, n = c.peek[0], false, 1
		}
		err, c.peekErr = c.peekErr, nil
	default:
		n, err = c.body.Read(p)
	}
	if err != nil && c.expired.Load() {
		err = os.ErrDeadlineExceeded
	}
	return n, err
}

// WaitRead waits for the response's next bytes (readwait.Waiter) by
// reading one ahead into the conn, so that the layer above holds no read
// buffer while the stream is idle: x/net's body offers no other wait, and
// a Read blocked in it holds the caller's buffer (VMess's 64 KiB chunk
// buffer: 32 MiB for 500 held streams). The next Read returns that byte
// alone, and the one after it what x/net has buffered since.
func (c *conn) WaitRead() bool {
	if !c.peeked && c.peekErr == nil {
		var n int
		n, c.peekErr = c.body.Read(c.peek[:])
		c.peeked = n > 0
	}
	return true
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.expired.Load() {
		err = os.ErrDeadlineExceeded
	}
	return n, err
}

// CloseWrite ends the request body (END_STREAM): the server sees EOF and
// goes on answering.
func (c *conn) CloseWrite() error { return c.w.Close() }

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.open.Add(-1)
		c.w.Close()
		c.body.Close()
		c.cancel()
		c.mu.Lock()
		for _, t := range []*time.Timer{c.rt, c.wt} {
			if t != nil {
				t.Stop()
			}
		}
		c.mu.Unlock()
	})
	return nil
}

// LocalAddr and RemoteAddr are unknown: streams share a connection.
func (c *conn) LocalAddr() net.Addr  { return h2Addr{} }
func (c *conn) RemoteAddr() net.Addr { return h2Addr{} }

type h2Addr struct{}

func (h2Addr) Network() string { return "h2" }
func (h2Addr) String() string  { return "h2" }

// SetDeadline sets both deadlines.
func (c *conn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

// SetReadDeadline ends the stream at t: an HTTP/2 body read cannot be
// interrupted and resumed, so a passed deadline cancels the request and
// Read reports os.ErrDeadlineExceeded.
func (c *conn) SetReadDeadline(t time.Time) error { return c.setDeadline(&c.rt, t) }

// SetWriteDeadline is like SetReadDeadline for writes.
func (c *conn) SetWriteDeadline(t time.Time) error { return c.setDeadline(&c.wt, t) }

func (c *conn) setDeadline(timer **time.Timer, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *timer != nil {
		(*timer).Stop()
		*timer = nil
	}
	if t.IsZero() {
		return nil
	}
	*timer = time.AfterFunc(time.Until(t), func() {
		c.expired.Store(true)
		c.cancel()
		c.w.CloseWithError(os.ErrDeadlineExceeded)
	})
	return nil
}
