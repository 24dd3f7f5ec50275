// Package vless is the VLESS client: one stream to the server per flow (TCP)
// or per UDP destination, over plain TCP, TLS, or WebSocket over TLS, with
// the request header sent together with the flow's first bytes so that it
// rides in WebSocket early data when the node allows it.
//
// Not supported yet, each reported by New: the flow xtls-rprx-vision,
// REALITY, and the grpc, httpupgrade and h2 transports.
package vless

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/core/transport/ws"
)

// Client is a VLESS outbound through one server. It keeps no connection
// across flows; Close closes the flows it handed out.
type Client struct {
	addr   string // server:port, for dialing and for errors
	id     UUID
	flow   string
	dialer outbound.Dialer
	tls    *tls.Config // nil: no TLS
	ws     *ws.Config  // nil: no WebSocket

	mu     sync.Mutex
	open   map[io.Closer]struct{}
	closed bool
}

var _ outbound.Outbound = (*Client)(nil)

// New returns a client for n, which must be a VLESS node. d opens the
// sockets to the server; nil means a zero outbound.SystemDialer.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	if n == nil || n.VLESS == nil {
		return nil, errors.New("vless: node has no VLESS options")
	}
	if n.Server == "" || n.Port == 0 {
		return nil, errors.New("vless: node has no server address")
	}
	addr := n.Address()
	o := n.VLESS
	id, err := ParseUUID(o.UUID)
	if err != nil {
		return nil, fmt.Errorf("%w (server %s)", err, addr)
	}
	switch o.Flow {
	case "":
	case "xtls-rprx-vision", "xtls-rprx-vision-udp443":
		return nil, fmt.Errorf("vless: %s: flow %q is not supported yet", addr, o.Flow)
	default:
		return nil, fmt.Errorf("vless: %s: unknown flow %q", addr, o.Flow)
	}
	if n.Multiplex != "" {
		return nil, fmt.Errorf("vless: %s: multiplex %q is not supported yet", addr, n.Multiplex)
	}
	if e := o.Encryption; e != "" && e != "none" {
		return nil, fmt.Errorf("vless: %s: encryption %q is not supported (only \"none\")", addr, e)
	}
	if d == nil {
		d = &outbound.SystemDialer{}
	}
	c := &Client{addr: addr, id: id, flow: o.Flow, dialer: d, open: map[io.Closer]struct{}{}}

	t := n.Transport
	typ := node.TransportTCP
	if t != nil && t.Type != "" {
		typ = t.Type
	}
	var alpn []string
	switch typ {
	case node.TransportTCP, "raw":
		if t != nil && t.HeaderType != "" && t.HeaderType != "none" {
			return nil, fmt.Errorf("vless: %s: tcp header type %q is not supported yet", addr, t.HeaderType)
		}
	case node.TransportWS:
		alpn = []string{"http/1.1"}
		c.ws, err = wsConfig(n)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("vless: %s: transport %q is not supported yet (only tcp and ws)", addr, typ)
	}
	if n.TLS != nil {
		if n.TLS.Reality != nil {
			return nil, fmt.Errorf("vless: %s: REALITY is not supported yet", addr)
		}
		c.tls, err = tlsconf.New(n.TLS, n.Server, alpn...)
		if err != nil {
			return nil, fmt.Errorf("vless: %s: %w", addr, err)
		}
	}
	return c, nil
}

// wsConfig builds the WebSocket settings of n. The Host header is the
// transport's Host, else a Host in its headers, else the TLS server name,
// else the server. An "ed=N" left in the path's query is taken as
// MaxEarlyData, as Xray's clients do.
func wsConfig(n *node.Node) (*ws.Config, error) {
	t := n.Transport
	cfg := &ws.Config{Path: t.Path, Headers: t.Headers, MaxEarlyData: t.MaxEarlyData, EarlyDataHeader: t.EarlyDataHeader}
	for k, v := range t.Headers {
		if strings.EqualFold(k, "Host") && v != "" {
			cfg.Host = v
		}
	}
	if t.Host != "" {
		cfg.Host = t.Host
	}
	if cfg.Host == "" && n.TLS != nil && n.TLS.SNI != "" {
		cfg.Host = n.TLS.SNI
	}
	if cfg.Host == "" {
		cfg.Host = n.Server
		if strings.Contains(cfg.Host, ":") {
			cfg.Host = "[" + cfg.Host + "]"
		}
	}
	if path, query, ok := strings.Cut(cfg.Path, "?"); ok {
		q, err := url.ParseQuery(query)
		if err == nil && q.Has("ed") {
			ed, err := strconv.Atoi(q.Get("ed"))
			if err != nil || ed < 0 {
				return nil, fmt.Errorf("vless: %s: ws path: bad ed=%q", n.Address(), q.Get("ed"))
			}
			if cfg.MaxEarlyData == 0 {
				cfg.MaxEarlyData = ed
			}
			q.Del("ed")
			cfg.Path = path
			if len(q) > 0 {
				cfg.Path += "?" + q.Encode()
			}
		}
	}
	if cfg.MaxEarlyData < 0 {
		return nil, fmt.Errorf("vless: %s: ws: negative max early data", n.Address())
	}
	return cfg, nil
}

// DialContext opens a stream to dst through the server. It returns once the
// TCP connection, the TLS handshake and (without early data) the WebSocket
// upgrade are done; the VLESS request goes with the first Write.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("vless: %s: network %q, want tcp", c.addr, network)
	}
	return c.dialStream(ctx, cmdTCP, dst)
}

// dialStream opens one VLESS stream for cmd toward dst and tracks it.
func (c *Client) dialStream(ctx context.Context, cmd byte, dst flow.Addr) (*conn, error) {
	req, err := appendRequest(make([]byte, 0, 64), &c.id, c.flow, cmd, dst)
	if err != nil {
		return nil, fmt.Errorf("%w (server %s)", err, c.addr)
	}
	tr, err := c.dialTransport(ctx)
	if err != nil {
		return nil, err
	}
	vc := newConn(tr, c, req)
	if !c.track(vc) {
		tr.Close()
		return nil, fmt.Errorf("vless: %s: client closed", c.addr)
	}
	return vc, nil
}

// dialTransport dials the server and runs the TLS and WebSocket layers.
func (c *Client) dialTransport(ctx context.Context) (net.Conn, error) {
	raw, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("vless: dial %s: %w", c.addr, err)
	}
	conn := raw
	if c.tls != nil {
		tc := tlsconf.Client(raw, c.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("vless: TLS handshake with %s: %w", c.addr, err)
		}
		conn = tc
	}
	if c.ws != nil {
		wc, err := ws.Client(ctx, conn, *c.ws)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("vless: %s: %w", c.addr, err)
		}
		conn = wc
	}
	return conn, nil
}

// ListenPacket opens a UDP session whose first destination is dst. The
// stream to dst is dialed before ListenPacket returns (so an unreachable
// server is reported here); streams to other destinations are dialed on
// their first WriteTo.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	pc := newPacketConn(c)
	if !c.track(pc) {
		return nil, fmt.Errorf("vless: %s: client closed", c.addr)
	}
	if _, err := pc.stream(ctx, dst); err != nil {
		pc.Close()
		return nil, err
	}
	return pc, nil
}

// Close closes every stream and packet session the client handed out.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	open := c.open
	c.open = nil
	c.mu.Unlock()
	for cl := range open {
		cl.Close()
	}
	return nil
}

func (c *Client) track(cl io.Closer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.open[cl] = struct{}{}
	return true
}

func (c *Client) untrack(cl io.Closer) {
	c.mu.Lock()
	delete(c.open, cl)
	c.mu.Unlock()
}
