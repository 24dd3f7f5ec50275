// Package flow describes a flow — one TCP stream or one UDP session from an
// app — and the seam between the inbounds that accept flows (the local proxy,
// the TUN netstack) and the engine that routes and relays them.
//
// It is a leaf package on purpose: inbounds, outbounds, the router and the
// engine all speak in its types, so none of them needs to import another.
package flow

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Addr is a flow's destination: an IP address or a domain name, and a port.
// A name is carried unresolved so that the proxy server, not this machine,
// resolves it (no DNS query leaks from the client).
//
// Addr implements net.Addr so that it can be passed to and returned from
// net.PacketConn methods; its Network is "udp" in that role.
type Addr struct {
	IP   netip.Addr // set when the destination is an address
	Name string     // set when the destination is a domain name (no trailing dot)
	Port uint16
}

// AddrFromAddrPort returns the Addr of an IP and port. IPv4-mapped IPv6
// addresses are unmapped.
func AddrFromAddrPort(ap netip.AddrPort) Addr {
	return Addr{IP: ap.Addr().Unmap(), Port: ap.Port()}
}

// NameAddr returns the Addr of a host, which may be a domain name or an IP
// literal, and a port. Trailing dots are dropped, and so is an IPv6 zone,
// which means nothing beyond this machine.
func NameAddr(host string, port uint16) Addr {
	host = strings.TrimRight(host, ".")
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return Addr{IP: ip.Unmap().WithZone(""), Port: port}
	}
	return Addr{Name: host, Port: port}
}

// ParseAddr parses "host:port", where host is a name, an IPv4 address or a
// bracketed IPv6 address.
func ParseAddr(hostport string) (Addr, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return Addr{}, fmt.Errorf("flow: address %q: %w", hostport, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return Addr{}, fmt.Errorf("flow: address %q: bad port", hostport)
	}
	a := NameAddr(host, uint16(p))
	if !a.IsValid() {
		return Addr{}, fmt.Errorf("flow: address %q: empty host", hostport)
	}
	return a, nil
}

// AddrFromNet converts a net.Addr (*net.TCPAddr, *net.UDPAddr or Addr) into
// an Addr.
func AddrFromNet(a net.Addr) (Addr, error) {
	switch a := a.(type) {
	case Addr:
		return a, nil
	case *Addr:
		return *a, nil
	case *net.UDPAddr:
		return AddrFromAddrPort(a.AddrPort()), nil
	case *net.TCPAddr:
		return AddrFromAddrPort(a.AddrPort()), nil
	case nil:
		return Addr{}, errors.New("flow: nil address")
	default:
		return ParseAddr(a.String())
	}
}

// IsValid reports whether a names a destination.
func (a Addr) IsValid() bool { return a.IP.IsValid() || a.Name != "" }

// IsName reports whether a is a domain name rather than an IP address.
func (a Addr) IsName() bool { return !a.IP.IsValid() && a.Name != "" }

// Host returns the domain name or the IP address as text, without brackets.
func (a Addr) Host() string {
	if a.IP.IsValid() {
		return a.IP.String()
	}
	return a.Name
}

// String returns "host:port", with brackets around an IPv6 address.
func (a Addr) String() string {
	return net.JoinHostPort(a.Host(), strconv.Itoa(int(a.Port)))
}

// Network returns "udp": Addr stands in for a *net.UDPAddr in PacketConns.
func (a Addr) Network() string { return "udp" }

// AddrPort returns the IP and port; it is invalid when a is a name.
func (a Addr) AddrPort() netip.AddrPort { return netip.AddrPortFrom(a.IP, a.Port) }

// UDPAddr returns a as a *net.UDPAddr, or nil when a is a name.
func (a Addr) UDPAddr() *net.UDPAddr {
	if !a.IP.IsValid() {
		return nil
	}
	return net.UDPAddrFromAddrPort(a.AddrPort())
}
