// Package hysteria is the Hysteria v1 outbound: TCP streams and UDP
// sessions carried to a Hysteria v1 server (apernet/hysteria 1.x, sing-box's
// hysteria inbound) over one QUIC connection.
//
// A Client keeps one QUIC connection (quicconn.Shared: dialled on first
// use, again when it dies). Its first stream is the control stream: the
// client writes the protocol version (3) and a hello with its send and
// receive rates and the auth payload, and the server answers whether it
// accepts them, with its own rates. The stream then stays open, unused.
// Each TCP flow is one more stream with a request for host and port; each
// UDP session is a stream with a UDP request, whose answer carries the
// session's ID and which stays open while the session lives (closing it
// ends the session on the server). UDP datagrams travel in QUIC datagrams,
// fragmented when they do not fit one. Session IDs belong to one
// connection: after a reconnection a session asks for a new one before it
// sends again, since a server drops a connection that sends a datagram for
// an unknown session.
//
// xplus obfuscation (the node's Obfs key) wraps the UDP socket with
// xorobfs.XPlus; the ALPN defaults to "hysteria".
//
// Congestion control: v1 has both ends pace their sending with Brutal at
// the negotiated rate. The server does so for downloads at the DownMbps
// the client declares (capped by its own limit). Upstream quic-go has no
// hook for a custom congestion controller, so uploads use quic-go's
// built-in one: UpMbps is declared to the server but does not pace the
// client.
package hysteria

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
	"github.com/skiffvpn/skiff/core/outbound/internal/xorobfs"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// DefaultALPN is v1's ALPN when the node names none.
const DefaultALPN = "hysteria"

// mbps is one megabit per second in bytes per second, as v1 counts it.
const mbps = 125000

// ErrUDPRefused is wrapped when the server refuses a UDP session (its UDP
// relay is off).
var ErrUDPRefused = errors.New("server refused the UDP session")

// Client is a Hysteria v1 outbound. It implements outbound.Outbound and is
// safe for concurrent use.
type Client struct {
	srv     quicconn.Server // Name: "host:port"
	auth    []byte
	sendBPS uint64 // declared upload rate
	recvBPS uint64 // declared download rate: the server paces to it
	obfs    string // xplus key; "" without obfuscation

	conns *quicconn.Shared[*qconn]

	udpMu    sync.Mutex
	sessions map[*packetConn]struct{} // open UDP sessions; nil once closed
}

// qconn is one accepted QUIC connection and the socket it runs on.
type qconn struct {
	quicconn.Link
	control *quic.Stream // kept open for the connection's life
	hello   serverHello

	udpMu sync.RWMutex
	udp   map[uint32]*packetConn // the sessions on this connection by their ID
}

// New returns a Client for node n, whose sockets come from d (nil: the
// system's). It does not connect; the first flow does.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	o := n.Hysteria
	if o == nil {
		return nil, errors.New("hysteria: node has no hysteria options")
	}
	if n.Server == "" || n.Port == 0 {
		return nil, errors.New("hysteria: node has no server or port")
	}
	c := &Client{srv: quicconn.Server{Proto: "hysteria", Name: n.Address(), Host: n.Server, Port: n.Port, Dialer: d}, auth: o.Auth, obfs: o.Obfs}
	switch o.Protocol {
	case "", node.HysteriaUDP:
	case node.HysteriaFakeTCP, node.HysteriaWechatVideo:
		return nil, node.Unsupportedf(node.FeatureTransport, o.Protocol,
			"hysteria: %s: the %s protocol is not supported (only udp): it needs raw sockets or a packet disguise Skiff does not have", c.srv.Name, o.Protocol)
	default:
		return nil, fmt.Errorf("hysteria: %s: unknown protocol %q", c.srv.Name, o.Protocol)
	}
	if o.UpMbps <= 0 || o.DownMbps <= 0 {
		return nil, fmt.Errorf("hysteria: %s: up and down Mbps are required (the server refuses a hello without them)", c.srv.Name)
	}
	c.sendBPS, c.recvBPS = uint64(o.UpMbps)*mbps, uint64(o.DownMbps)*mbps
	if c.srv.Dialer == nil {
		c.srv.Dialer = &outbound.SystemDialer{}
	}
	tc, err := tlsconf.New(n.TLS, n.Server, DefaultALPN)
	if err != nil {
		return nil, fmt.Errorf("hysteria: %s: %w", c.srv.Name, err)
	}
	c.srv.TLS = tc
	// sing-box's v1 defaults; a node's recv windows replace them.
	sw, cw := int64(quicconn.StreamReceiveWindow), int64(quicconn.ConnReceiveWindow)
	if o.RecvWindowConn > 0 {
		sw = o.RecvWindowConn
	}
	if o.RecvWindow > 0 {
		cw = o.RecvWindow
	}
	c.srv.QUIC = quicconn.NewConfig(uint64(sw), uint64(cw))
	c.srv.QUIC.KeepAlivePeriod = quicconn.KeepAlivePeriod
	c.srv.QUIC.DisablePathMTUDiscovery = o.DisableMTUDiscovery
	c.conns = quicconn.NewShared(c.srv.Proto, c.srv.Name, closeCodeOK, c.dial, c.run)
	c.sessions = make(map[*packetConn]struct{})
	return c, nil
}

// dial runs one connection attempt (for quicconn.Shared).
func (c *Client) dial(ctx context.Context, panics *guard.Reporter) (*qconn, error) {
	q := &qconn{Link: quicconn.Link{Panics: panics}, udp: make(map[uint32]*packetConn)}
	server, err := c.srv.Dial(ctx, &q.Link, func(sock net.PacketConn) net.PacketConn {
		return xorobfs.XPlus.Wrap(sock, c.obfs)
	}, false)
	if err != nil {
		return nil, err
	}
	if err := c.handshake(ctx, q); err != nil {
		q.Close(closeCodeProtocol)
		return nil, fmt.Errorf("hysteria: handshake with %s: %w", server, err)
	}
	return q, nil
}

// handshake sends the client hello on a new control stream and reads the
// server hello. Errors never contain the auth payload.
func (c *Client) handshake(ctx context.Context, q *qconn) error {
	st, err := q.QC.OpenStreamSync(ctx)
	if err != nil {
		return fmt.Errorf("open control stream: %w", err)
	}
	hello, err := appendClientHello(nil, c.sendBPS, c.recvBPS, c.auth)
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { st.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := st.Write(hello); err != nil {
		return helloError(ctx, err)
	}
	sh, err := readServerHello(st)
	if err != nil {
		return helloError(ctx, err)
	}
	if !sh.OK {
		return fmt.Errorf("authentication %w: %q", outbound.ErrAuthRejected, sh.Message)
	}
	st.SetDeadline(time.Time{})
	q.control, q.hello = st, sh
	return nil
}

// helloError names why the hello exchange failed: a server that closes
// the connection with v1's auth error code (2) refused the credentials.
func helloError(ctx context.Context, err error) error {
	var ae *quic.ApplicationError
	switch {
	case errors.As(err, &ae) && ae.Remote && ae.ErrorCode == closeCodeAuth:
		return fmt.Errorf("authentication %w (the server closed the connection: %s)", outbound.ErrAuthRejected, ae.ErrorMessage)
	case errors.Is(ctx.Err(), context.Canceled):
		return quicconn.ErrClientClosed
	case ctx.Err() != nil:
		return fmt.Errorf("timed out waiting for the server hello: %w", err)
	}
	return err
}

// run owns a live connection: it hands its datagrams to the UDP sessions
// and, when the connection dies, forgets it and closes its socket.
func (c *Client) run(q *qconn) {
	quicconn.Guarded(q.QC, closeCodeProtocol, q.Panics, "hysteria datagram reader", func() { c.receiveDatagrams(q) })
	c.conns.Serve(q)
}

// NetworkChanged retires the live QUIC connection (see
// quicconn.Shared.Retire): the next flow dials a new connection from a new
// socket, and UDP sessions move to it with their next datagram.
func (c *Client) NetworkChanged() {
	c.conns.Retire()
}

// Close closes the QUIC connection and its socket; open streams and UDP
// sessions end. A closed Client dials no more.
func (c *Client) Close() error {
	c.conns.Close(func() {
		c.udpMu.Lock()
		sessions := c.sessions
		c.sessions = nil
		c.udpMu.Unlock()
		for pc := range sessions {
			pc.Shut()
		}
	})
	return nil
}

var _ outbound.Outbound = (*Client)(nil)

// PathStats reports the live QUIC connection's figures and the download
// rate declared to the server, for the failover group's throttle judging.
func (c *Client) PathStats() (outbound.PathStats, bool) { return c.conns.PathStats(c.recvBPS) }
