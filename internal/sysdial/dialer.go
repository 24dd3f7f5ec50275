package sysdial

import (
	"context"
	"net"
	"syscall"
)

// Dialer opens the sockets an outbound uses to reach its server. In TUN mode
// the engine hands outbounds a Dialer whose sockets bypass the tunnel (a
// firewall mark on Linux, a bound interface elsewhere); otherwise a zero
// SystemDialer.
//
// ListenPacket with network "udp" must return a *net.UDPConn when it can:
// quic-go only batches, offloads (GSO) and uses ECN on a real UDP socket.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
	ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error)
}

// SystemDialer is a Dialer on the operating system's sockets.
type SystemDialer struct {
	// Mark, when non-zero, is set as SO_MARK on every socket (Linux), so that
	// policy routing can keep Skiff's own traffic out of the tunnel.
	Mark uint32
	// Interface, when set, binds every socket to that interface
	// (SO_BINDTODEVICE on Linux, IP_BOUND_IF on macOS, IP_UNICAST_IF on
	// Windows).
	Interface string
	// Resolver, when set, resolves the names this dialer is given (see
	// NewResolver: its queries leave on the same kind of socket). Nil
	// means the system's.
	Resolver *net.Resolver
}

// NameResolver returns the resolver for names this dialer is given (nil
// for the system's); LookupNetIP uses it.
func (d *SystemDialer) NameResolver() *net.Resolver { return d.Resolver }

// DialContext dials address on the system's network stack.
func (d *SystemDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	nd := net.Dialer{Control: d.control, Resolver: d.Resolver}
	return nd.DialContext(ctx, network, address)
}

// ListenPacket opens a packet socket on the system's network stack.
func (d *SystemDialer) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	lc := net.ListenConfig{Control: d.control}
	return lc.ListenPacket(ctx, network, address)
}

func (d *SystemDialer) control(network, address string, c syscall.RawConn) error {
	if d.Mark == 0 && d.Interface == "" {
		return nil
	}
	var serr error
	err := c.Control(func(fd uintptr) { serr = setSocketOptions(fd, network, d.Mark, d.Interface) })
	if err != nil {
		return err
	}
	return serr
}
