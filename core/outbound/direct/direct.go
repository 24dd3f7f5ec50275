// Package direct is the outbound that sends flows straight to their
// destination from this machine, without a proxy server: the target of
// "direct" routing rules and the outbound the engine is tested with.
//
// Names are resolved by the operating system's resolver, so a flow routed
// here does leak its DNS lookup; that is what "direct" means.
package direct

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/internal/sysdial"
)

// Direct is an outbound.Outbound that dials destinations itself.
type Direct struct {
	d outbound.Dialer
}

var _ outbound.Outbound = (*Direct)(nil)

// New returns a Direct that opens its sockets with d (nil: a zero
// outbound.SystemDialer).
func New(d outbound.Dialer) *Direct {
	if d == nil {
		d = &outbound.SystemDialer{}
	}
	return &Direct{d: d}
}

// DialContext connects to dst.
func (o *Direct) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if network == "" {
		network = "tcp"
	}
	c, err := o.d.DialContext(ctx, network, dst.String())
	if err != nil {
		return nil, fmt.Errorf("direct: dial %s: %w", dst, err)
	}
	return c, nil
}

// ListenPacket opens an unconnected UDP socket for a session. dst is only
// used to pick the address family when it is an IPv4 address; datagrams may
// go to any destination.
func (o *Direct) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	network := "udp"
	if dst.IP.Is4() {
		// An IPv4-only socket works on hosts without IPv6 too.
		network = "udp4"
	}
	pc, err := o.d.ListenPacket(ctx, network, ":0")
	if err != nil {
		return nil, fmt.Errorf("direct: udp socket for %s: %w", dst, err)
	}
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		pc.Close()
		return nil, fmt.Errorf("direct: udp socket for %s: dialer returned %T, not a UDP socket", dst, pc)
	}
	return &packetConn{UDPConn: uc, network: network, d: o.d, names: make(map[string]netip.Addr)}, nil
}

// resolveTimeout bounds a name lookup for a UDP destination.
const resolveTimeout = 5 * time.Second

// Close does nothing: Direct keeps nothing across flows.
func (o *Direct) Close() error { return nil }

// packetConn is a UDP socket that takes flow.Addr destinations, resolving
// names (once per name and session), and reports sources as flow.Addr.
type packetConn struct {
	*net.UDPConn
	network string
	d       outbound.Dialer // resolves its names

	mu    sync.Mutex
	names map[string]netip.Addr // resolved destinations of this session

	// lastSrc/lastAddr cache the most recent source so that ReadFrom does
	// not box a new net.Addr per datagram from the same peer. Only the
	// reading goroutine touches them.
	lastSrc  netip.AddrPort
	lastAddr net.Addr
}

// ReadFrom reads a datagram and returns its source as a flow.Addr.
func (c *packetConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, ap, err := c.UDPConn.ReadFromUDPAddrPort(b)
	if err != nil {
		return n, nil, err
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if ap != c.lastSrc || c.lastAddr == nil {
		c.lastSrc = ap
		c.lastAddr = flow.AddrFromAddrPort(ap)
	}
	return n, c.lastAddr, nil
}

// WriteTo sends b to addr, a flow.Addr, *flow.Addr or *net.UDPAddr.
func (c *packetConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	var ap netip.AddrPort
	switch a := addr.(type) {
	case flow.Addr:
		ip, err := c.resolve(a)
		if err != nil {
			return 0, err
		}
		ap = netip.AddrPortFrom(ip, a.Port)
	case *flow.Addr:
		ip, err := c.resolve(*a)
		if err != nil {
			return 0, err
		}
		ap = netip.AddrPortFrom(ip, a.Port)
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		fa, err := flow.AddrFromNet(addr)
		if err != nil {
			return 0, fmt.Errorf("direct: udp to %v: %w", addr, err)
		}
		return c.WriteTo(b, fa)
	}
	return c.UDPConn.WriteToUDPAddrPort(b, ap)
}

// resolve returns a's IP, looking its name up once per session.
func (c *packetConn) resolve(a flow.Addr) (netip.Addr, error) {
	if !a.IsName() {
		return a.IP, nil
	}
	c.mu.Lock()
	ip, ok := c.names[a.Name]
	c.mu.Unlock()
	if ok {
		return ip, nil
	}
	ipNet := "ip"
	if c.network == "udp4" {
		ipNet = "ip4"
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	ips, err := sysdial.LookupNetIP(ctx, c.d, ipNet, a.Name)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("direct: resolve %s: %w", a.Name, err)
	}
	ip = ips[0].Unmap()
	c.mu.Lock()
	if len(c.names) < 256 {
		c.names[a.Name] = ip
	}
	c.mu.Unlock()
	return ip, nil
}
