// Package xhttp is Xray's XHTTP transport (SplitHTTP's successor) as a
// client. Each proxy stream becomes plain HTTP requests, which CDNs and
// HTTP proxies pass where WebSocket is blocked: a GET whose response
// streams the download, and the upload as sequenced POSTs (packet-up), one
// streaming POST (stream-up), or the same single POST that carries the
// download (stream-one). Every request carries the x_padding that Xray's
// server demands. Streams share HTTP/2 connections through x/net's
// http2.Transport; HTTP/1.1 (packet-up only) uses net/http's pool.
package xhttp

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Mode is how the upload travels.
type Mode string

const (
	Auto      Mode = "auto"       // resolved by the caller: see ResolveMode
	PacketUp  Mode = "packet-up"  // POST path/<session>/<seq> per chunk, GET path/<session> down
	StreamUp  Mode = "stream-up"  // one streaming POST path/<session> up, GET down
	StreamOne Mode = "stream-one" // one POST path/ both ways (HTTP/2)
)

// ResolveMode is Xray's client choice for Auto: stream-one under REALITY
// (which is HTTP/2 to the server itself, no CDN in between), packet-up
// otherwise, the mode every CDN passes.
func ResolveMode(m Mode, reality bool) Mode {
	if m != Auto && m != "" {
		return m
	}
	if reality {
		return StreamOne
	}
	return PacketUp
}

// Version is the HTTP version requests use.
type Version int

const (
	HTTP2 Version = iota // over TLS with ALPN h2 (or REALITY)
	HTTP1                // HTTP/1.1, with or without TLS: packet-up only
	HTTP3                // over QUIC with ALPN h3: see NewHTTP3
)

// Defaults, as Xray's: x_padding of 100-1000 bytes; POSTs of at most
// 1,000,000 bytes at least 30 ms apart (the server buffers 30 out of
// order).
var (
	DefaultPadding          = Range{100, 1000}
	DefaultMaxEachPost      = Range{1_000_000, 1_000_000}
	DefaultMinPostsInterval = Range{30, 30}
)

// Config is what the requests say.
type Config struct {
	Host             string // the Host / :authority (required)
	Path             string // path prefix; "/" is added at both ends
	Mode             Mode   // PacketUp, StreamUp or StreamOne
	HTTP             Version
	TLS              bool              // https: the dial returns a TLS connection
	Headers          map[string]string // extra request headers
	Padding          Range             // x_padding length; zero: DefaultPadding
	NoGRPCHeader     bool              // streaming POSTs without Content-Type: application/grpc
	MaxEachPost      Range             // zero: DefaultMaxEachPost
	MinPostsInterval Range             // ms; zero: DefaultMinPostsInterval
	MaxConnections   int               // HTTP/2 connections streams spread over; 0: DefaultMaxConnections
}

// DefaultMaxConnections is xmux's maxConnections in Xray 26.3.27 (6; 3
// from v26.7.28). Spreading matters: Go's HTTP/2 server, Xray's, gives
// each connection 1 MiB of upload window, which one connection's streams
// share; 16 streams uploading on one connection got 0.44x of Xray's
// packet-up upload (cmd/xhttpbench).
const DefaultMaxConnections = 6

// StatusError is a response other than 200.
type StatusError struct {
	Method, URL string
	Status      int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("xhttp: %s %s: server answered %d", e.Method, e.URL, e.Status)
}

// Keepalive of shared HTTP/2 connections: one silent for idleTimeout is
// pinged and closed without an answer within pingTimeout, so a server
// that restarted is noticed by the next stream rather than by a timeout.
const (
	idleTimeout = 30 * time.Second
	pingTimeout = 15 * time.Second
	dialTimeout = 20 * time.Second // TCP and TLS of one connection
)

// Client opens streams as XHTTP requests on shared connections.
type Client struct {
	cfg  Config
	base string              // scheme://host/path/
	rts  []http.RoundTripper // streams take turns; each keeps its connections
	idle []func()            // close idle connections
	next atomic.Uint32       // the next stream's round tripper
	ua   string
}

// pick returns the round tripper of the next stream.
func (c *Client) pick() http.RoundTripper {
	return c.rts[int(c.next.Add(1)-1)%len(c.rts)]
}

// chromeUA is sent unless the headers name another: Go's own user agent
// would mark every request.
const chromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36"

// New returns a client whose connections come from dial: a TLS
// connection that negotiated h2 for HTTP2, a TLS or plain one for HTTP1.
func New(cfg Config, dial func(ctx context.Context) (net.Conn, error)) (*Client, error) {
	c, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	cfg = c.cfg
	timed := func(ctx context.Context) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		return dial(ctx)
	}
	switch cfg.HTTP {
	case HTTP2:
		for range cfg.MaxConnections {
			t := &http2.Transport{
				DialTLSContext: func(ctx context.Context, _, _ string, _ *tls.Config) (net.Conn, error) {
					return timed(ctx)
				},
				AllowHTTP:          !cfg.TLS,
				DisableCompression: true,
				ReadIdleTimeout:    idleTimeout,
				PingTimeout:        pingTimeout,
			}
			c.rts, c.idle = append(c.rts, t), append(c.idle, t.CloseIdleConnections)
		}
	case HTTP1:
		d := func(ctx context.Context, _, _ string) (net.Conn, error) { return timed(ctx) }
		t := &http.Transport{
			DisableCompression:  true,
			MaxIdleConnsPerHost: maxInflightPosts + 1,
			IdleConnTimeout:     idleTimeout,
			ForceAttemptHTTP2:   false,
		}
		if cfg.TLS {
			t.DialTLSContext = d
		} else {
			t.DialContext = d
		}
		c.rts, c.idle = []http.RoundTripper{t}, []func(){t.CloseIdleConnections}
	default:
		return nil, fmt.Errorf("xhttp: HTTP version %d (HTTP/3 is NewHTTP3)", cfg.HTTP)
	}
	return c, nil
}

// prepare checks cfg, fills in its defaults and returns a client without
// its round tripper.
func prepare(cfg Config) (*Client, error) {
	if cfg.Host == "" {
		return nil, errors.New("xhttp: no host")
	}
	switch cfg.Mode {
	case PacketUp:
	case StreamUp, StreamOne:
		if cfg.HTTP == HTTP1 {
			return nil, fmt.Errorf("xhttp: mode %s needs HTTP/2", cfg.Mode)
		}
	default:
		return nil, fmt.Errorf("xhttp: mode %q", cfg.Mode)
	}
	if cfg.Padding.IsZero() {
		cfg.Padding = DefaultPadding
	}
	if cfg.MaxEachPost.IsZero() {
		cfg.MaxEachPost = DefaultMaxEachPost
	}
	if cfg.MinPostsInterval.IsZero() {
		cfg.MinPostsInterval = DefaultMinPostsInterval
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxConnections < 1 || cfg.MaxConnections > maxConnections {
		return nil, fmt.Errorf("xhttp: max connections %d (1-%d)", cfg.MaxConnections, maxConnections)
	}
	if cfg.Padding.From < 1 || cfg.MaxEachPost.From < 1 {
		return nil, errors.New("xhttp: padding and post sizes must be at least 1")
	}
	path := "/" + strings.Trim(cfg.Path, "/")
	if path != "/" {
		path += "/"
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("xhttp: path %q has a query or fragment", cfg.Path)
	}
	scheme := "http"
	if cfg.TLS {
		scheme = "https"
	}
	c := &Client{cfg: cfg, base: scheme + "://" + cfg.Host + path, ua: chromeUA}
	for k, v := range cfg.Headers {
		if strings.EqualFold(k, "User-Agent") {
			c.ua = v
		}
	}
	return c, nil
}

// Mode is the client's upload mode.
func (c *Client) Mode() Mode { return c.cfg.Mode }

// Close closes the idle connections; open streams end with their Close.
func (c *Client) Close() {
	for _, f := range c.idle {
		f()
	}
}

// request builds a request for url with the headers and a fresh
// x_padding in the Referer, as Xray's client sends it.
func (c *Client) request(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	for k, v := range c.cfg.Headers {
		if strings.EqualFold(k, "Host") {
			continue
		}
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", c.ua)
	req.Header.Set("Referer", url+"?x_padding="+strings.Repeat("X", c.cfg.Padding.rand()))
	return req, nil
}

// do sends req on rt and wants 200; on any other answer the body is closed.
func (c *Client) do(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("xhttp: %s %s: %w", req.Method, req.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &StatusError{Method: req.Method, URL: req.URL.String(), Status: resp.StatusCode}
	}
	return resp, nil
}

// rand picks uniformly in r.
func (r Range) rand() int {
	if r.To <= r.From {
		return r.From
	}
	return r.From + mrand.IntN(r.To-r.From+1)
}

// newSessionID is a random UUID, as Xray's clients use.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
