// Package httpupgrade is V2Ray's HTTPUpgrade transport: an HTTP/1.1 GET
// with "Connection: Upgrade" and "Upgrade: websocket", answered by 101,
// after which the connection carries the proxy's bytes raw, with no
// WebSocket framing. CDNs pass it like a WebSocket upgrade; it costs
// nothing per byte.
package httpupgrade

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// Config is what the upgrade request says.
type Config struct {
	Host    string            // the Host header (required)
	Path    string            // with a query if any; empty: "/"
	Headers map[string]string // extra request headers; Host here is ignored
}

// maxResponseHead bounds the answer's status line and headers: a server
// (or anyone on a path without TLS) cannot make the client buffer more.
const maxResponseHead = 8 << 10

// Client runs the upgrade on c, bounded by ctx, and returns the stream.
// It is c itself unless the server sent bytes right behind its answer,
// so the layer below keeps its fast paths (tlsconf's TryRead). On error
// c is left to the caller to close.
func Client(ctx context.Context, c net.Conn, cfg Config) (net.Conn, error) {
	req, target, err := request(cfg)
	if err != nil {
		return nil, err
	}
	// ctx ending unblocks the handshake (and then says why it failed).
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) (net.Conn, error) {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("httpupgrade: upgrade to %s: %w", target, err)
	}
	if _, err := c.Write(req); err != nil {
		return fail(err)
	}
	head, rest, err := readHead(c)
	if err != nil {
		return fail(err)
	}
	if err := checkResponse(head); err != nil {
		return fail(err)
	}
	if !stop() {
		return fail(ctx.Err())
	}
	if len(rest) > 0 {
		return &preConn{Conn: c, pre: rest}, nil
	}
	return c, nil
}

// request builds the upgrade request, refusing what HTTP/1.1 cannot
// carry (a space or line break would end the request line or a header).
func request(cfg Config) ([]byte, string, error) {
	path := cfg.Path
	if path == "" {
		path = "/"
	} else if path[0] != '/' {
		path = "/" + path
	}
	target := cfg.Host + path
	if cfg.Host == "" {
		return nil, target, errors.New("httpupgrade: no host")
	}
	if !httpguts.ValidHostHeader(cfg.Host) {
		return nil, target, fmt.Errorf("httpupgrade: host %q is not a valid Host header", cfg.Host)
	}
	for i := 0; i < len(path); i++ {
		if path[i] <= ' ' || path[i] == 0x7f {
			return nil, target, fmt.Errorf("httpupgrade: path %q has a space or control character", path)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n", path, cfg.Host)
	keys := make([]string, 0, len(cfg.Headers))
	for k := range cfg.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := cfg.Headers[k]
		switch strings.ToLower(k) {
		case "host", "connection", "upgrade":
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return nil, target, fmt.Errorf("httpupgrade: header %q: not a valid HTTP header", k)
		}
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	return b.Bytes(), target, nil
}

// readHead reads up to the end of the answer's headers; rest is what
// came behind them in the same reads.
func readHead(c net.Conn) (head, rest []byte, err error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			if cap(buf) >= maxResponseHead {
				return nil, nil, fmt.Errorf("answer longer than %d bytes", maxResponseHead)
			}
			buf = append(buf[:cap(buf)], make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := c.Read(buf[len(buf):min(cap(buf), maxResponseHead)])
		// Look for the end from a little before the new bytes.
		from := max(len(buf)-3, 0)
		buf = buf[:len(buf)+n]
		if i := bytes.Index(buf[from:], []byte("\r\n\r\n")); i >= 0 {
			end := from + i + 4
			return buf[:end], buf[end:], nil
		}
		if err == io.EOF && len(buf) == 0 {
			return nil, nil, errors.New("server closed the connection without answering")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading the answer: %w", err)
		}
	}
}

// checkResponse wants 101 with the upgrade to websocket confirmed, as
// sing-box's client does.
func checkResponse(head []byte) error {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
	if err != nil {
		return fmt.Errorf("bad answer: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return &StatusError{Status: resp.StatusCode}
	}
	if !httpguts.HeaderValuesContainsToken(resp.Header["Connection"], "upgrade") || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		return fmt.Errorf("101 without Connection: upgrade and Upgrade: websocket (got %q, %q)", resp.Header.Get("Connection"), resp.Header.Get("Upgrade"))
	}
	return nil
}

// StatusError is an answer other than 101.
type StatusError struct{ Status int }

func (e *StatusError) Error() string { return fmt.Sprintf("server answered %d", e.Status) }

// preConn reads what the server sent behind its answer before reading c.
type preConn struct {
	net.Conn
	pre []byte
}

func (c *preConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		if c.pre = c.pre[n:]; len(c.pre) == 0 {
			c.pre = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite half-closes the connection below, when it can.
func (c *preConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ClientFastOpen is Client without the wait for the 101 (Xray's ?ed=N,
// mihomo's v2ray-http-upgrade-fast-open): it sends the request and
// returns, and the first Read takes the answer before any data. That
// saves a round trip per connection. The request goes in a write of its
// own, as Xray's client sends it: both servers read the request through a
// buffer they then drop, so bytes in the same TLS record would be lost
// (the e2e test saw every flow fail that way).
func ClientFastOpen(ctx context.Context, c net.Conn, cfg Config) (net.Conn, error) {
	req, target, err := request(cfg)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.SetWriteDeadline(time.Unix(1, 0)) })
	_, err = c.Write(req)
	if !stop() {
		c.SetWriteDeadline(time.Time{})
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("httpupgrade: upgrade to %s: %w", target, err)
	}
	return &fastConn{preConn: preConn{Conn: c}, target: target}, nil
}

// fastConn reads the answer on the first Read, then what came behind it
// (preConn).
type fastConn struct {
	preConn // pre is guarded by rmu
	target  string

	rmu  sync.Mutex
	read bool  // the answer was read
	rerr error // the answer's error
}

func (c *fastConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.read {
		c.read = true
		head, rest, err := readHead(c.Conn)
		if err == nil {
			err = checkResponse(head)
		}
		if err != nil {
			c.rerr = fmt.Errorf("httpupgrade: upgrade to %s: %w", c.target, err)
		} else if len(rest) > 0 {
			c.pre = rest
		}
	}
	if c.rerr != nil {
		return 0, c.rerr
	}
	return c.preConn.Read(p)
}

// WaitRead waits on the connection once the answer was read; before, it
// cannot (readwait.Waiter).
func (c *fastConn) WaitRead() bool {
	c.rmu.Lock()
	done, ready := c.read, c.rerr != nil || len(c.pre) > 0
	c.rmu.Unlock()
	if !done {
		return false
	}
	if ready {
		return true
	}
	if w := readwait.Of(c.Conn); w != nil {
		return w.WaitRead()
	}
	return false
}

// WaitRead is true at once while bytes from behind the answer are left.
func (c *preConn) WaitRead() bool {
	if len(c.pre) > 0 {
		return true
	}
	if w := readwait.Of(c.Conn); w != nil {
		return w.WaitRead()
	}
	return false
}
