package wireguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
)

// nameTimeout bounds resolving one datagram's destination name.
const nameTimeout = 5 * time.Second

// packetConn is a UDP session through the tunnel: WriteTo takes a
// flow.Addr (a name is resolved through the tunnel, and remembered) or a
// *net.UDPAddr; ReadFrom returns a flow.Addr.
type packetConn struct {
	*gonet.UDPConn
	t     *netTUN
	res   *net.Resolver
	v6    bool
	flows *outbound.Flows
	once  sync.Once

	mu    sync.Mutex
	names map[string]netip.Addr // destinations resolved so far
}

func (p *packetConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, err
	}
	ip := dst.IP.Unmap()
	if dst.IsName() {
		if ip, err = p.resolve(dst.Name); err != nil {
			return 0, err
		}
	}
	if ip.Is6() != p.v6 {
		return 0, fmt.Errorf("wireguard: udp to %s: the session's socket is of the other address family", dst)
	}
	return p.UDPConn.WriteTo(b, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, dst.Port)))
}

func (p *packetConn) resolve(name string) (netip.Addr, error) {
	p.mu.Lock()
	ip, ok := p.names[name]
	p.mu.Unlock()
	if ok {
		return ip, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), nameTimeout)
	defer cancel()
	ips, err := lookup(ctx, p.t, p.res, name)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("wireguard: resolve %s through the tunnel: %w", name, err)
	}
	for _, a := range ips {
		if a.Is6() == p.v6 {
			ip, ok = a, true
			break
		}
	}
	if !ok {
		return netip.Addr{}, errors.New("wireguard: resolve " + name + ": no address of the session's family")
	}
	p.mu.Lock()
	if p.names == nil {
		p.names = map[string]netip.Addr{}
	}
	if len(p.names) < 64 {
		p.names[name] = ip
	}
	p.mu.Unlock()
	return ip, nil
}

func (p *packetConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := p.UDPConn.ReadFrom(b)
	if err != nil {
		return n, nil, err
	}
	ua, _ := a.(*net.UDPAddr)
	if ua == nil {
		return n, nil, errors.New("wireguard: udp: datagram without a source")
	}
	ap := ua.AddrPort()
	return n, flow.AddrFromAddrPort(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())), nil
}

func (p *packetConn) Close() error {
	p.once.Do(func() { p.flows.Remove(p) })
	return p.UDPConn.Close()
}
