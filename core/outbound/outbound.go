// Package outbound defines what every protocol client is to the rest of
// Skiff: a dialer of streams and of packet sessions toward a destination,
// through one server. Each protocol lives in its own package below this one
// (hysteria2, vless, direct, block, …) and implements Outbound.
package outbound

import (
	"context"
	"errors"
	"net"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/internal/sysdial"
)

// Dialer opens the sockets an outbound uses to reach its server, and
// SystemDialer is one on the operating system's sockets. Both are defined
// in internal/sysdial (a leaf, so that tun can implement Dialer without
// importing core) and named here because every outbound takes one.
type (
	Dialer       = sysdial.Dialer
	SystemDialer = sysdial.SystemDialer
)

// Outbound carries flows to their destination.
//
// DialContext opens a stream to dst; network is "tcp". It returns only once
// the server has confirmed the stream where the protocol has such a
// confirmation (Hysteria2's TCP response), so that a failure is seen here
// and not by the app after its connection was accepted.
//
// ListenPacket opens a UDP session whose first destination is dst. Its
// WriteTo accepts a flow.Addr (or *net.UDPAddr) per datagram; ReadFrom
// returns the datagram's source as a flow.Addr.
//
// Close releases what the outbound keeps across flows (a QUIC connection,
// idle sockets). Flows already handed out are closed too.
type Outbound interface {
	DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error)
	ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error)
	Close() error
}

// ErrAuthRejected is wrapped by a protocol client's error when the server
// refused its credentials (a wrong password or UUID, an expired plan), so
// that front ends can say so without reading the text.
var ErrAuthRejected = errors.New("rejected")

// ErrTargetRefused is wrapped by a protocol client's error when the server
// answered but could not open the destination (its DNS failed, the host
// refused it): the server is up, so a group does not count this against
// it.
var ErrTargetRefused = errors.New("the server could not reach the destination")

// HTTPDial returns a DialContext for net/http's Transport whose TCP
// connections go through ob. net/http dials on a goroutine of its own, so
// a panic in ob's dial is caught and becomes that dial's error (see
// package guard); what names the dial in that error.
func HTTPDial(ob Outbound, what string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (_ net.Conn, err error) {
		defer guard.Catch(ctx, &err, what)
		dst, err := flow.ParseAddr(addr)
		if err != nil {
			return nil, err
		}
		return ob.DialContext(ctx, "tcp", dst)
	}
}
