// Package vless is the VLESS client: one stream to the server per flow (TCP)
// or per UDP destination, over plain TCP, TLS (Go's or a uTLS fingerprint),
// REALITY, WebSocket over TLS or HTTP/2 (transport/stack), with
// the request header sent together with the flow's first bytes so that it
// rides in WebSocket early data when the node allows it.
//
// Not supported yet, each reported by New: the flow xtls-rprx-vision,
// and the grpc and httpupgrade transports.
package vless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
	"github.com/skiffvpn/skiff/core/transport/stack"
)

// Client is a VLESS outbound through one server. It keeps no connection
// across flows; Close closes the flows it handed out.
type Client struct {
	addr  string // server:port, for dialing and for errors
	id    UUID
	flow  string
	stack *stack.Stack // TCP, TLS, WebSocket

	flows outbound.Flows
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
	if e := o.Encryption; e != "" && e != "none" {
		return nil, fmt.Errorf("vless: %s: encryption %q is not supported (only \"none\")", addr, e)
	}
	st, err := stack.New("vless", n, d)
	if err != nil {
		return nil, err
	}
	return &Client{addr: addr, id: id, flow: o.Flow, stack: st}, nil
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
func (c *Client) dialStream(ctx context.Context, cmd byte, dst flow.Addr) (*reqconn.Conn, error) {
	req, err := appendRequest(make([]byte, 0, 64), &c.id, c.flow, cmd, dst)
	if err != nil {
		return nil, fmt.Errorf("%w (server %s)", err, c.addr)
	}
	tr, err := c.stack.Dial(ctx)
	if err != nil {
		return nil, err
	}
	var vc *reqconn.Conn
	vc = reqconn.New(tr, req, "vless", c.addr, readResponse, func() { c.untrack(vc) })
	if !c.track(vc) {
		tr.Close()
		return nil, fmt.Errorf("vless: %s: client closed", c.addr)
	}
	return vc, nil
}

// ListenPacket opens a UDP session whose first destination is dst. The
// stream to dst is dialed before ListenPacket returns (so an unreachable
// server is reported here); streams to other destinations are dialed on
// their first WriteTo.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	pc := newPacketConn(c, ctx)
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
	c.flows.Close()
	c.stack.Close()
	return nil
}

func (c *Client) track(cl io.Closer) bool { return c.flows.Add(cl) }

func (c *Client) untrack(cl io.Closer) { c.flows.Remove(cl) }
