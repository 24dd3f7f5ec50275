// Package hysteria2 is the Hysteria 2 outbound: TCP streams and UDP
// sessions carried to a Hysteria 2 server over one QUIC connection, as
// specified in apernet/hysteria's PROTOCOL.md.
//
// A Client keeps one QUIC connection shared by all its flows, dialled on
// first use and authenticated with HTTP/3 POST https://hysteria/auth; when
// it dies the next flow dials a new one (quicconn.Shared). Each TCP flow is
// one bidirectional stream; UDP sessions travel in QUIC datagrams,
// fragmented when one does not fit (frag.go), and survive a reconnection.
// Salamander obfuscation (xorobfs.Salamander), port hopping (hop.go) and
// the receive offload of the plain socket (core/transport/udpgro) wrap the
// connection's UDP socket.
package hysteria2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
	"github.com/skiffvpn/skiff/core/outbound/internal/xorobfs"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// QUIC settings: the windows and timeouts are the reference client's
// defaults (quicconn.NewConfig).
const (
	// QUIC close codes (HTTP/3 error codes, as the reference uses).
	closeCodeOK       = 0x100 // H3_NO_ERROR
	closeCodeProtocol = 0x101 // H3_GENERAL_PROTOCOL_ERROR
)

// Client is a Hysteria 2 outbound. It implements outbound.Outbound and is
// safe for concurrent use.
type Client struct {
	srv   quicconn.Server // Name: "host:port" or "host:ports"; Port: the one port without hopping
	ports portSet         // ports to pick from; one port without hopping
	h3    http3.Transport // settings for the HTTP/3 auth request only
	auth  string
	// rxRate is the node's DownMbps, declared as Hysteria-CC-RX: the
	// server paces downloads to it with Brutal. Upstream quic-go has no
	// hook for a custom congestion controller, so uploads use quic-go's
	// own (UpMbps is not used) and the rate the server declares is parsed
	// but not acted on. bytes/s, 0 unknown.
	rxRate   uint64
	obfs     string        // Salamander password; "" without obfuscation
	hopEvery time.Duration // hop interval with several ports

	conns *quicconn.Shared[*qconn] // the live connection and the dial in progress

	udp *quicconn.Sessions[uint32, *packetConn] // open UDP sessions by session ID
}

// qconn is one authenticated QUIC connection and the socket it runs on.
type qconn struct {
	quicconn.Link
	hop *hopConn // Sock, for a multi-port server; nil otherwise
	udp bool     // the server relays UDP
}

// New returns a Client for node n, whose sockets come from d (nil: the
// system's). It does not connect; the first flow does.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	if n.Hysteria2 == nil {
		return nil, errors.New("hysteria2: node has no hysteria2 options")
	}
	o := n.Hysteria2
	if n.Server == "" {
		return nil, errors.New("hysteria2: node has no server")
	}
	c := &Client{
		srv:  quicconn.Server{Proto: "hysteria2", Host: n.Server, Dialer: d},
		auth: o.Auth,
	}
	if c.srv.Dialer == nil {
		c.srv.Dialer = &outbound.SystemDialer{}
	}
	if o.Ports != "" {
		ps, err := parsePorts(o.Ports)
		if err != nil {
			return nil, fmt.Errorf("hysteria2: %s: %w", n.Server, err)
		}
		c.ports = ps
		c.srv.Name = net.JoinHostPort(n.Server, o.Ports)
		c.hopEvery = hopInterval(o.HopInterval)
	} else {
		if n.Port == 0 {
			return nil, fmt.Errorf("hysteria2: %s: no port", n.Server)
		}
		c.ports = portSet{{n.Port, n.Port}}
		c.srv.Name = n.Address()
	}
	if c.ports.size() == 1 {
		c.srv.Port = c.ports.pick()
	}
	switch o.Obfs {
	case "":
	case "salamander":
		if o.ObfsPassword == "" {
			return nil, fmt.Errorf("hysteria2: %s: salamander needs a password", c.srv.Name)
		}
		c.obfs = o.ObfsPassword
	default:
		return nil, fmt.Errorf("hysteria2: %s: unknown obfuscation %q", c.srv.Name, o.Obfs)
	}
	if o.DownMbps > 0 {
		c.rxRate = uint64(o.DownMbps) * 1_000_000 / 8
	}
	tc, err := tlsconf.New(n.TLS, n.Server, http3.NextProtoH3)
	if err != nil {
		return nil, fmt.Errorf("hysteria2: %s: %w", c.srv.Name, err)
	}
	c.srv.TLS = tc
	c.srv.QUIC = quicconn.NewConfig(quicconn.StreamReceiveWindow, quicconn.ConnReceiveWindow)
	c.srv.QUIC.KeepAlivePeriod = quicconn.KeepAlivePeriod
	c.conns = quicconn.NewShared(c.srv.Proto, c.srv.Name, closeCodeOK, c.dial, c.run)
	c.udp = quicconn.NewSessions[uint32, *packetConn]()
	return c, nil
}

// conn returns the live connection, dialling one if there is none.
func (c *Client) conn(ctx context.Context) (*qconn, error) { return c.conns.Get(ctx) }

// dial runs one connection attempt (for quicconn.Shared): it opens the
// socket, dials QUIC and authenticates.
func (c *Client) dial(ctx context.Context, panics *guard.Reporter) (*qconn, error) {
	q := &qconn{Link: quicconn.Link{Panics: panics}}
	var server string
	var err error
	if c.ports.size() == 1 {
		server, err = c.srv.Dial(ctx, &q.Link, func(sock net.PacketConn) net.PacketConn {
			return xorobfs.Salamander.Wrap(sock, c.obfs)
		}, false)
	} else {
		server, err = c.dialHopping(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	if err := c.authenticate(ctx, q); err != nil {
		q.Close(closeCodeProtocol)
		return nil, fmt.Errorf("hysteria2: auth to %s: %w", server, err)
	}
	return q, nil
}

// dialHopping dials QUIC into q for a server with several ports: a hopConn
// picks the port and owns the sockets. It returns the server's name for
// errors.
func (c *Client) dialHopping(ctx context.Context, q *qconn) (string, error) {
	ip, err := quicconn.Resolve(ctx, c.srv.Dialer, c.srv.Proto, c.srv.Name, c.srv.Host)
	if err != nil {
		return "", err
	}
	raddr := &net.UDPAddr{IP: ip.AsSlice()}
	h, err := newHopConn(ctx, c.listen, ip, c.ports, raddr)
	if err != nil {
		return "", err // "hysteria2: hop to host:port: …"
	}
	raddr.Port = int(h.port())
	q.Sock, q.hop = h, h
	server := quicconn.ServerName(c.srv.Name, raddr)
	return server, q.Dial(ctx, &c.srv, server, xorobfs.Salamander.Wrap(h, c.obfs), raddr, false)
}

// listen opens a UDP socket from the dialer.
func (c *Client) listen(ctx context.Context) (net.PacketConn, error) {
	return c.srv.Dialer.ListenPacket(ctx, "udp", "")
}

// hopInterval returns the hop interval for a node's setting: the default
// for 0, at least MinHopInterval otherwise.
func hopInterval(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultHopInterval
	}
	return max(d, MinHopInterval)
}

// authenticate sends the HTTP/3 auth request on q and reads the answer.
// Errors never contain the auth string.
func (c *Client) authenticate(ctx context.Context, q *qconn) error {
	// A raw client connection does not accept the server's HTTP/3
	// unidirectional streams, so http3 never starts reading QUIC
	// datagrams itself: they all carry Hysteria UDP messages.
	cc := c.h3.NewRawClientConn(q.QC)
	req := &http.Request{
		Method: http.MethodPost,
		URL:    &url.URL{Scheme: "https", Host: "hysteria", Path: "/auth"},
		Header: make(http.Header),
	}
	req = req.WithContext(ctx)
	authHeader(req.Header, c.auth, c.rxRate)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return quicconn.ErrClientClosed
		}
		if ctx.Err() != nil {
			return fmt.Errorf("timed out: %w", ctx.Err())
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != statusAuthOK {
		return fmt.Errorf("%w (status %d)", outbound.ErrAuthRejected, resp.StatusCode)
	}
	res, err := parseAuthResponse(resp.Header)
	if err != nil {
		return err
	}
	q.udp = res.UDP
	return nil
}

// run owns a live connection: it delivers its datagrams to the UDP
// sessions and, when the connection dies, forgets it and closes its socket.
func (c *Client) run(q *qconn) {
	if q.hop != nil {
		c.conns.Go(func() { c.hopLoop(q) })
	}
	if q.udp {
		quicconn.Guarded(q.QC, closeCodeProtocol, q.Panics, "hysteria2 datagram reader", func() { c.receiveDatagrams(q) })
	}
	c.conns.Serve(q)
}

// hopLoop moves q to a new server port every hop interval until q dies. A
// hop that fails (no socket to be had) leaves q where it is until the next.
func (c *Client) hopLoop(q *qconn) {
	q.Every(c.hopEvery, func(ctx context.Context) {
		hctx, cancel := context.WithTimeout(ctx, quicconn.DialTimeout)
		q.hop.hop(hctx)
		cancel()
	})
}

// Close closes the QUIC connection and its socket; open streams and UDP
// sessions end. A closed Client dials no more.
func (c *Client) Close() error {
	c.conns.Close(func() {
		for _, pc := range c.udp.Close() {
			pc.Shut()
		}
	})
	return nil
}

var _ outbound.Outbound = (*Client)(nil)

// PathStats reports the live QUIC connection's figures and the receive
// rate declared to the server (Hysteria-CC-RX), for the failover group's
// throttle judging. ok is false while there is no live connection.
func (c *Client) PathStats() (outbound.PathStats, bool) { return c.conns.PathStats(c.rxRate) }
