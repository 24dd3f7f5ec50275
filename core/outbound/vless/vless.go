// Package vless is the VLESS client: one stream to the server per flow (TCP)
// or per UDP destination, over plain TCP, TLS (Go's or a uTLS fingerprint),
// REALITY, WebSocket, HTTPUpgrade, HTTP/2 or gRPC (transport/stack), with
// the request header sent together with the flow's first bytes so that it
// rides in WebSocket early data when the node allows it.
//
// The flow xtls-rprx-vision (vision.go) runs over TLS or REALITY on TCP.
package vless

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
	"github.com/skiffvpn/skiff/core/outbound/internal/udpstreams"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// flowVision is the Vision flow's name (vision.go).
const flowVision = "xtls-rprx-vision"

// Client is a VLESS outbound through one server. It keeps no connection
// across flows; Close closes the flows it handed out.
type Client struct {
	addr  string // server:port, for dialing and for errors
	id    UUID
	flow  string       // sent in the request
	stack *stack.Stack // TCP, TLS, WebSocket

	vision bool // flow xtls-rprx-vision (vision.go)
	udp443 bool // …-udp443: UDP to port 443 allowed

	flows outbound.Flows
}

// New returns a client for n, which must be a VLESS node. d opens the
// sockets to the server; nil means a zero outbound.SystemDialer.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	addr, err := outbound.NodeAddress(n, n != nil && n.VLESS != nil, "vless", "VLESS")
	if err != nil {
		return nil, err
	}
	o := n.VLESS
	id, err := node.ParseUUID(o.UUID)
	if err != nil {
		return nil, fmt.Errorf("vless: %w (server %s)", err, addr)
	}
	var vision, udp443 bool
	switch o.Flow {
	case "":
	case flowVision, flowVision + "-udp443":
		vision, udp443 = true, o.Flow != flowVision
		if n.TLS == nil {
			return nil, fmt.Errorf("vless: %s: flow %s needs TLS or REALITY", addr, flowVision)
		}
		if t := n.Transport; t != nil && t.Type != "" && t.Type != node.TransportTCP && t.Type != "raw" {
			return nil, fmt.Errorf("vless: %s: flow %s runs over tcp only, not %s", addr, flowVision, t.Type)
		}
	default:
		return nil, fmt.Errorf("vless: %s: unknown flow %q", addr, o.Flow)
	}
	if e := o.Encryption; e != "" && e != "none" {
		return nil, node.Unsupportedf(node.FeatureCipher, e, "vless: %s: encryption %q is not supported (only \"none\")", addr, e)
	}
	st, err := stack.New("vless", n, d)
	if err != nil {
		return nil, err
	}
	c := &Client{addr: addr, id: id, stack: st, vision: vision, udp443: udp443}
	if vision {
		c.flow = flowVision // the -udp443 suffix is the client's own
	}
	return c, nil
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
	flowName := c.flow
	if cmd == cmdUDP {
		flowName = ""
	}
	req, err := appendRequest(make([]byte, 0, 64), &c.id, flowName, cmd, dst)
	if err != nil {
		return nil, fmt.Errorf("%w (server %s)", err, c.addr)
	}
	tr, err := c.stack.Dial(ctx)
	if err != nil {
		return nil, err
	}
	if c.vision && cmd != cmdUDP {
		tc, ok := tr.(*tlsconf.Conn)
		if !ok {
			tr.Close()
			return nil, fmt.Errorf("vless: %s: flow %s: the transport is not TLS", c.addr, flowVision)
		}
		tr = newVisionConn(tc, c.id, len(req))
	}
	var vc *reqconn.Conn
	vc = reqconn.New(tr, req, "vless", c.addr, readResponse, func() { c.flows.Remove(vc) })
	if err := c.flows.Keep(vc, "vless", c.addr); err != nil {
		return nil, err
	}
	return vc, nil
}

// ListenPacket opens a UDP session whose first destination is dst. The
// stream to dst is dialed before ListenPacket returns (so an unreachable
// server is reported here); streams to other destinations are dialed on
// their first WriteTo. Under Vision the whole session is one XUDP stream
// (xudp.go).
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	if c.vision {
		if err := c.checkUDP(dst); err != nil {
			return nil, err
		}
		pc, err := c.listenXUDP(ctx, dst)
		if err != nil {
			return nil, err
		}
		if err := c.flows.Keep(pc, "vless", c.addr); err != nil {
			return nil, err
		}
		return pc, nil
	}
	return udpstreams.Listen(ctx, c.packetConfig(), dst, &c.flows)
}

// checkUDP refuses UDP to port 443 under Vision, unless the flow is
// …-udp443: as in Xray, QUIC would bypass Vision, and browsers fall back
// to TCP.
func (c *Client) checkUDP(dst flow.Addr) error {
	if c.vision && dst.Port == 443 && !c.udp443 {
		return fmt.Errorf("vless: %s: flow %s refuses UDP to port 443 (flow %s-udp443 allows it)", c.addr, flowVision, flowVision)
	}
	return nil
}

// Close closes every stream and packet session the client handed out.
func (c *Client) Close() error {
	c.flows.Close()
	c.stack.Close()
	return nil
}
