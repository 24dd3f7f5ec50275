// Package trojan is the Trojan client (trojan-gfw docs/protocol.md): one
// stream to the server per TCP flow, over TLS, WebSocket over TLS or HTTP/2
// over TLS (plain TCP too, when a node turns TLS off), starting with the hex SHA-224 of the
// password, a command and the destination. A UDP session is one stream
// (UDP ASSOCIATE) whose frames each carry their own destination, so one
// stream serves every destination of the session.
//
// The request header goes with the flow's first bytes, so that it rides in
// the same TLS record (and in WebSocket early data when the node allows
// it). Trojan servers answer nothing: a wrong password shows as the server
// closing the stream (or serving its fallback site), not as an error reply.
package trojan

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
	"github.com/skiffvpn/skiff/core/outbound/internal/stack"
)

// Client is a Trojan outbound through one server. It keeps no connection
// across flows; Close closes the flows it handed out.
type Client struct {
	stack *stack.Stack
	key   [keyLen]byte

	flows outbound.Flows
}

// New returns a client for n, which must be a Trojan node. d opens the
// sockets to the server; nil means a zero outbound.SystemDialer.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	addr, err := outbound.NodeAddress(n, n != nil && n.Trojan != nil, "trojan", "Trojan")
	if err != nil {
		return nil, err
	}
	if n.Trojan.Password == "" {
		return nil, fmt.Errorf("trojan: %s: empty password", addr)
	}
	if m := n.Trojan.SSMethod; m != "" {
		return nil, node.Unsupportedf(node.FeatureOption, "trojan-go shadowsocks", "trojan: %s: trojan-go's shadowsocks layer (%s) is not supported", addr, m)
	}
	st, err := stack.New("trojan", n, d)
	if err != nil {
		return nil, err
	}
	return &Client{stack: st, key: key(n.Trojan.Password)}, nil
}

// DialContext opens a stream to dst through the server. It returns once
// the TCP connection, the TLS handshake and (without early data) the
// WebSocket upgrade are done; the request goes with the first Write.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("trojan: %s: network %q, want tcp", c.stack.Addr(), network)
	}
	return c.dialStream(ctx, cmdConnect, dst)
}

// dialStream opens one Trojan stream for cmd toward dst and tracks it.
func (c *Client) dialStream(ctx context.Context, cmd byte, dst flow.Addr) (*reqconn.Conn, error) {
	req, err := appendRequest(make([]byte, 0, keyLen+8+len(dst.Name)), &c.key, cmd, dst)
	if err != nil {
		return nil, fmt.Errorf("%w (server %s)", err, c.stack.Addr())
	}
	tr, err := c.stack.Dial(ctx)
	if err != nil {
		return nil, err
	}
	var tc *reqconn.Conn
	tc = reqconn.New(tr, req, "trojan", c.stack.Addr(), nil, func() { c.flows.Remove(tc) })
	if err := c.flows.Keep(tc, "trojan", c.stack.Addr()); err != nil {
		return nil, err
	}
	return tc, nil
}

// ListenPacket opens a UDP session, one UDP ASSOCIATE stream, whose first
// destination is dst. The stream is dialed before ListenPacket returns, so
// that an unreachable server is reported here.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	s, err := c.dialStream(ctx, cmdUDPAssociate, dst)
	if err != nil {
		return nil, err
	}
	return newPacketConn(c, s), nil
}

// Close closes every stream and packet session the client handed out.
func (c *Client) Close() error {
	c.flows.Close()
	c.stack.Close()
	return nil
}
