// Package tuic is the TUIC v5 outbound (EAimTY/tuic SPEC.md): TCP streams
// and UDP sessions carried to a TUIC server over one QUIC connection
// (quic-go), shared by all of a Client's flows and dialled again when it
// dies (package quicconn, as for Hysteria2). Each TCP flow is one
// bidirectional stream opened by the Connect command; UDP sessions use the
// Packet command, in QUIC datagrams fragmented to fit (udp_relay_mode
// native, the default) or one unidirectional stream per datagram (quic),
// and every fragment carries its destination address (the spec allows
// None after the first; always sending it suits every server). Heartbeats
// keep the connection and the NAT mappings alive. quic-go's socket is the
// outbound.Dialer's, wrapped by udpgro.
package tuic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/core/transport/udpgro"
)

// QUIC settings, beside quicconn.NewConfig's.
const (
	maxIncomingUni = 1024 // server-opened streams: UDP packets in quic mode

	// DefaultHeartbeat is the heartbeat interval when the node does not
	// say (sing-box's).
	DefaultHeartbeat = 10 * time.Second
	// MinHeartbeat is the shortest heartbeat interval.
	MinHeartbeat = time.Second

	closeCodeOK = 0
)

// Relay modes.
const (
	modeNative = "native"
	modeQUIC   = "quic"
)

// Client is a TUIC v5 outbound. It implements outbound.Outbound and is safe
// for concurrent use.
type Client struct {
	srv       quicconn.Server // Name: "host:port"
	uuid      [16]byte
	password  string
	udpMode   string
	zeroRTT   bool
	heartbeat time.Duration

	conns *quicconn.Shared[*qconn]

	udp *quicconn.Sessions[uint16, *packetConn] // open UDP sessions by association ID
}

// qconn is one QUIC connection and the socket it runs on.
type qconn struct {
	quicconn.Link

	// heard is set once anything came from the server beyond the
	// handshake (stream data, a packet): the server took the
	// authentication. Until then, the server closing the connection
	// means it refused it.
	heard    atomic.Bool
	watching atomic.Bool // a stall check is armed
	stalled  atomic.Bool
}

// New returns a Client for node n, whose sockets come from d (nil: the
// system's). It does not connect; the first flow does.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	name, err := outbound.NodeAddress(n, n.TUIC != nil, "tuic", "tuic")
	if err != nil {
		return nil, err
	}
	o := n.TUIC
	c := &Client{srv: quicconn.Server{Proto: "tuic", Name: name, Host: n.Server, Port: n.Port, Dialer: d}, password: o.Password, zeroRTT: o.ZeroRTT}
	if c.srv.Dialer == nil {
		c.srv.Dialer = &outbound.SystemDialer{}
	}
	if l := len(o.UUID); l != 36 && l != 32 {
		return nil, fmt.Errorf("tuic: %s: uuid: want a UUID (32 hex digits, dashes optional)", c.srv.Name)
	}
	id, err := node.ParseUUID(o.UUID)
	if err != nil {
		return nil, fmt.Errorf("tuic: %s: uuid: want a UUID (32 hex digits, dashes optional)", c.srv.Name)
	}
	c.uuid = id
	switch cc := o.CongestionControl; cc {
	// quic-go has one congestion controller, its CUBIC, and no hook for
	// another: all three are accepted and get it; the server's choice
	// governs downloads.
	case "", "cubic", "new_reno", "bbr":
	default:
		return nil, node.Unsupportedf(node.FeatureOption, "congestion control "+cc, "tuic: %s: congestion control %q is not supported (cubic, new_reno, bbr)", c.srv.Name, cc)
	}
	switch m := o.UDPRelayMode; m {
	case "", modeNative:
		c.udpMode = modeNative
	case modeQUIC:
		c.udpMode = modeQUIC
	default:
		return nil, node.Unsupportedf(node.FeatureOption, "udp relay mode "+m, "tuic: %s: udp relay mode %q is not supported (native, quic)", c.srv.Name, m)
	}
	if o.UDPOverStream {
		return nil, node.Unsupportedf(node.FeatureOption, "udp_over_stream", "tuic: %s: udp_over_stream is not supported", c.srv.Name)
	}
	c.heartbeat = DefaultHeartbeat
	if o.Heartbeat > 0 {
		c.heartbeat = max(o.Heartbeat, MinHeartbeat)
	}
	tc, err := tlsconf.New(n.TLS, n.Server, "h3")
	if err != nil {
		return nil, fmt.Errorf("tuic: %s: %w", c.srv.Name, err)
	}
	c.srv.TLS = tc
	c.srv.QUIC = quicconn.NewConfig(quicconn.StreamReceiveWindow, quicconn.ConnReceiveWindow)
	c.srv.QUIC.MaxIncomingUniStreams = maxIncomingUni
	c.conns = quicconn.NewShared(c.srv.Proto, c.srv.Name, closeCodeOK, c.dial, c.run)
	c.udp = quicconn.NewSessions[uint16, *packetConn]()
	return c, nil
}

// dial runs one connection attempt (for quicconn.Shared).
func (c *Client) dial(ctx context.Context, panics *guard.Reporter) (*qconn, error) {
	q := &qconn{Link: quicconn.Link{Panics: panics}}
	// 0-RTT (the node's ZeroRTT): with a session ticket, streams open
	// before the handshake completes and Authenticate follows once it has
	// (the exporter needs the full handshake). Early data a server rejects
	// is lost: the flows opened in it fail, the connection goes on in 1-RTT.
	server, err := c.srv.Dial(ctx, &q.Link, udpgro.Wrap, c.zeroRTT)
	if err != nil {
		return nil, err
	}
	if !c.zeroRTT {
		if err := c.authenticate(q); err != nil {
			q.Close(closeCodeOK)
			return nil, fmt.Errorf("tuic: authenticate to %s: %w", server, err)
		}
	}
	return q, nil
}

// authenticate sends the Authenticate command on a new unidirectional
// stream: the UUID and a 32-byte token, the TLS keying material exporter
// (RFC 5705) with the UUID as label and the password as context. The
// handshake must be complete. Other commands may go out before the server
// has read it, so flows do not wait; the server never answers it, and a
// wrong UUID or password shows as the server closing the connection before
// it sent anything (the flows' errors wrap outbound.ErrAuthRejected).
func (c *Client) authenticate(q *qconn) error {
	cs := q.QC.ConnectionState().TLS
	token, err := cs.ExportKeyingMaterial(string(c.uuid[:]), []byte(c.password), tokenLen)
	if err != nil {
		return fmt.Errorf("export keying material: %w", err)
	}
	st, err := q.QC.OpenUniStream()
	if err != nil {
		return fmt.Errorf("open stream: %w", err)
	}
	b := appendAuthenticate(make([]byte, 0, 2+16+tokenLen), c.uuid, token)
	if _, err := st.Write(b); err != nil {
		st.CancelWrite(0)
		return fmt.Errorf("send: %w", err)
	}
	return st.Close()
}

// run owns a live connection: it completes a 0-RTT handshake and
// authenticates, sends heartbeats, hands the server's UDP packets to the
// sessions and, when the connection dies, forgets it and closes its
// socket.
func (c *Client) run(q *qconn) {
	ctx := q.QC.Context()
	if c.zeroRTT {
		c.conns.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-q.QC.HandshakeComplete():
			}
			if !q.QC.ConnectionState().Used0RTT {
				// No early data, or the server refused it: the streams
				// opened in it failed (quic.Err0RTTRejected); later ones
				// go in 1-RTT.
				if _, err := q.QC.NextConnection(ctx); err != nil {
					return
				}
			}
			if err := c.authenticate(q); err != nil {
				q.QC.CloseWithError(closeCodeOK, "")
			}
		})
	}
	c.conns.Go(func() { c.heartbeatLoop(q) })
	c.conns.Go(func() { c.guarded(q, "tuic packet stream reader", c.receiveStreams) })
	c.guarded(q, "tuic datagram reader", c.receiveDatagrams)
	c.conns.Serve(q)
}

// guarded runs f for q with a panic ending this connection rather than
// the process (quicconn.Guarded).
func (c *Client) guarded(q *qconn, what string, f func(*qconn)) {
	quicconn.Guarded(q.QC, closeCodeOK, q.Panics, what, func() { f(q) })
}

// heartbeatLoop sends the Heartbeat command every heartbeat interval
// until q dies.
func (c *Client) heartbeatLoop(q *qconn) {
	q.Every(c.heartbeat, func(context.Context) {
		q.QC.SendDatagram(heartbeat) // an error means the connection is going
	})
}

// watch arms a stall check after a stream request on q: if no packet at
// all comes from the server within the stall timeout, q is closed.
func (q *qconn) watch() {
	if !q.watching.CompareAndSwap(false, true) {
		return
	}
	rx := q.QC.ConnectionStats().PacketsReceived
	time.AfterFunc(quicconn.StallTimeout(q.QC), func() {
		defer q.watching.Store(false)
		if q.Alive() && q.QC.ConnectionStats().PacketsReceived == rx {
			q.stalled.Store(true)
			q.QC.CloseWithError(closeCodeOK, "")
		}
	})
}

// explain turns the error a flow got on q into one that says why: the
// server refusing the authentication, or not answering. A server that
// refuses it resets the streams and closes the connection (sing-box) or
// just closes it; so a reset on a connection that has brought nothing
// yet waits a moment for the close; so does the end of an empty stream.
func (c *Client) explain(q *qconn, err error) error {
	if err == nil {
		return nil
	}
	var se *quic.StreamError
	var ae *quic.ApplicationError
	var te *quic.TransportError
	var sr *quic.StatelessResetError
	remote := func(err error) bool {
		return errors.As(err, &se) && se.Remote || errors.As(err, &ae) && ae.Remote ||
			errors.As(err, &te) && te.Remote || errors.As(err, &sr)
	}
	eof := errors.Is(err, io.EOF)
	if (eof || remote(err)) && !q.heard.Load() && q.Alive() {
		t := time.NewTimer(authCloseWait)
		select {
		case <-q.QC.Context().Done():
		case <-t.C:
		}
		t.Stop()
	}
	switch {
	case q.Alive():
		return err
	case q.stalled.Load():
		// Not %w for err: quic-go's errors are net.ErrClosed, which a
		// relay takes for an orderly end.
		return fmt.Errorf("tuic: via %s: %w (%v)", c.srv.Name, quicconn.ErrStalled, err)
	case !q.heard.Load() && (remote(err) || eof && remote(context.Cause(q.QC.Context()))):
		return fmt.Errorf("tuic: via %s: the server closed the connection before sending anything: authentication %w (wrong UUID or password?) (%v)",
			c.srv.Name, outbound.ErrAuthRejected, err)
	}
	return err
}

// authCloseWait is how long explain waits for a server that reset a
// stream to close the connection too.
const authCloseWait = time.Second

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

// NetworkChanged retires the live connection (see quicconn.Shared.Retire).
func (c *Client) NetworkChanged() {
	c.conns.Retire()
}

var _ outbound.Outbound = (*Client)(nil)

// PathStats reports the live QUIC connection's figures, for the failover
// group's throttle judging. ok is false while there is no live connection.
func (c *Client) PathStats() (outbound.PathStats, bool) { return c.conns.PathStats(0) }
