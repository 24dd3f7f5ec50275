// Package wireguard is the WireGuard outbound (and Cloudflare WARP's):
// wireguard-go's device over a gVisor network stack in this process, so a
// flow through it is a TCP connection or UDP endpoint of that stack, whose
// packets the device seals and sends to the peer. There is no kernel
// interface and nothing needs root. The device's one UDP socket comes from
// the outbound.Dialer (Bind), and nothing is opened until the first flow.
package wireguard

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.zx2c4.com/wireguard/device"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/internal/sysdial"
)

const (
	// DefaultMTU is the interface's MTU when the node names none
	// (sing-box's default: a 1500-byte path over IPv6 with 12 bytes to spare).
	DefaultMTU = 1408
	// startTimeout bounds resolving the peers' names when the device starts.
	startTimeout = 10 * time.Second
)

// DefaultDNS is the resolver asked through the tunnel when the node names
// none.
var DefaultDNS = netip.MustParseAddr("1.1.1.1")

// Client is a WireGuard outbound. It implements outbound.Outbound and is
// safe for concurrent use.
type Client struct {
	name   string // "host:port" of the first peer, for errors
	dialer outbound.Dialer
	addrs  []netip.Prefix
	mtu    int
	dns    []netip.Addr
	key    [32]byte
	peers  []peer
	// amnezia holds AmneziaWG's UAPI lines; empty: plain WireGuard.
	amnezia string

	flows outbound.Flows

	mu     sync.Mutex // guards the fields below; held while the device starts
	closed bool
	dev    wgDevice
	tun    *netTUN
	bind   *Bind
	res    *net.Resolver
}

// wgDevice is what the client uses of a device: wireguard-go's or
// AmneziaWG's (amnezia.go).
type wgDevice interface {
	IpcSet(string) error
	IpcGet() (string, error)
	Up() error
	Close()
	BindUpdate() error
	SendKeepalivesToPeersWithCurrentKeypair()
}

// peer is one peer's settings, checked.
type peer struct {
	host      string
	port      uint16
	public    [32]byte
	preshared [32]byte
	allowed   []netip.Prefix
	reserved  [3]byte
	keepalive time.Duration
}

var _ outbound.Outbound = (*Client)(nil)

// New returns a Client for node n, whose socket comes from d (nil: the
// system's). It checks the settings and opens nothing.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	o := n.WireGuard
	if o == nil {
		return nil, errors.New("wireguard: node has no wireguard options")
	}
	c := &Client{name: n.Address(), dialer: d, mtu: o.MTU}
	if c.dialer == nil {
		c.dialer = &outbound.SystemDialer{}
	}
	if o.Amnezia != nil {
		u, err := amneziaUAPI(o.Amnezia)
		if err != nil {
			return nil, node.Unsupportedf(node.FeatureOption, "amneziawg", "wireguard: %s: %v", c.name, err)
		}
		c.amnezia = u
	}
	if c.mtu == 0 {
		c.mtu = DefaultMTU
	}
	var err error
	if c.key, err = node.WireGuardKey("private-key", o.PrivateKey); err != nil {
		return nil, fmt.Errorf("wireguard: %s: %w", c.name, err)
	}
	for _, a := range o.Addresses {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, fmt.Errorf("wireguard: %s: address %q: not a prefix", c.name, a)
		}
		c.addrs = append(c.addrs, p)
	}
	if len(c.addrs) == 0 {
		return nil, fmt.Errorf("wireguard: %s: no interface address", c.name)
	}
	for _, s := range o.DNS {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("wireguard: %s: dns %q: not an IP address", c.name, s)
		}
		c.dns = append(c.dns, a.Unmap())
	}
	if len(c.dns) == 0 {
		c.dns = []netip.Addr{DefaultDNS}
	}
	if len(o.Peers) == 0 {
		return nil, fmt.Errorf("wireguard: %s: no peer", c.name)
	}
	for i, op := range o.Peers {
		p := peer{host: op.Server, port: op.Port, reserved: op.Reserved, keepalive: op.Keepalive}
		if p.host == "" {
			p.host = n.Server
		}
		if p.port == 0 {
			p.port = n.Port
		}
		if p.host == "" || p.port == 0 {
			return nil, fmt.Errorf("wireguard: %s: peer %d: no endpoint", c.name, i+1)
		}
		if p.public, err = node.WireGuardKey("public-key", op.PublicKey); err != nil {
			return nil, fmt.Errorf("wireguard: %s: peer %d: %w", c.name, i+1, err)
		}
		if op.PresharedKey != "" {
			if p.preshared, err = node.WireGuardKey("pre-shared-key", op.PresharedKey); err != nil {
				return nil, fmt.Errorf("wireguard: %s: peer %d: %w", c.name, i+1, err)
			}
		}
		allowed := op.AllowedIPs
		if len(allowed) == 0 {
			allowed = node.DefaultAllowedIPs
		}
		for _, a := range allowed {
			pf, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("wireguard: %s: peer %d: allowed ip %q: not a prefix", c.name, i+1, a)
			}
			p.allowed = append(p.allowed, pf.Masked())
		}
		c.peers = append(c.peers, p)
	}
	return c, nil
}

// ErrClosed is returned by a Client's dials after Close.
var ErrClosed = errors.New("wireguard: outbound closed")

// start brings the device up on the first flow.
func (c *Client) start(ctx context.Context) (*netTUN, *net.Resolver, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, ErrClosed
	}
	if c.dev != nil {
		return c.tun, c.res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var uapi strings.Builder
	fmt.Fprintf(&uapi, "private_key=%s\nreplace_peers=true\n", hex.EncodeToString(c.key[:]))
	uapi.WriteString(c.amnezia)
	bind := NewBind(c.dialer)
	bind.raw = c.amnezia != ""
	for i, p := range c.peers {
		ep, err := c.resolve(ctx, p)
		if err != nil {
			return nil, nil, fmt.Errorf("wireguard: %s: peer %d: %w", c.name, i+1, err)
		}
		bind.SetReserved(ep, p.reserved)
		fmt.Fprintf(&uapi, "public_key=%s\nendpoint=%s\n", hex.EncodeToString(p.public[:]), ep)
		if p.preshared != ([32]byte{}) {
			fmt.Fprintf(&uapi, "preshared_key=%s\n", hex.EncodeToString(p.preshared[:]))
		}
		if p.keepalive > 0 {
			fmt.Fprintf(&uapi, "persistent_keepalive_interval=%d\n", int(p.keepalive/time.Second))
		}
		uapi.WriteString("replace_allowed_ips=true\n")
		for _, a := range p.allowed {
			fmt.Fprintf(&uapi, "allowed_ip=%s\n", a)
		}
	}
	t, err := newNetTUN(c.addrs, c.mtu)
	if err != nil {
		return nil, nil, fmt.Errorf("wireguard: %s: %w", c.name, err)
	}
	var dev wgDevice
	if c.amnezia != "" {
		dev = newAmneziaDevice(t, bind)
	} else {
		dev = device.NewDevice(t, bind, &device.Logger{Verbosef: device.DiscardLogf, Errorf: device.DiscardLogf})
	}
	if err := dev.IpcSet(uapi.String()); err != nil {
		dev.Close()
		return nil, nil, fmt.Errorf("wireguard: %s: configure device: %w", c.name, err)
	}
	if err := dev.Up(); err != nil {
		dev.Close()
		return nil, nil, fmt.Errorf("wireguard: %s: open UDP socket: %w", c.name, err)
	}
	c.dev, c.tun, c.bind = dev, t, bind
	c.res = &net.Resolver{PreferGo: true, Dial: c.dialDNS}
	return t, c.res, nil
}

// resolve finds p's endpoint with the Dialer's resolver (outside the
// tunnel).
func (c *Client) resolve(ctx context.Context, p peer) (netip.AddrPort, error) {
	ips, err := sysdial.LookupNetIP(ctx, c.dialer, "ip", p.host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: %w", p.host, err)
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: no address", p.host)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), p.port), nil
}

// dialDNS is the tunnel resolver's dial: every query goes to the node's
// first DNS server through the tunnel, whatever server Go picked.
func (c *Client) dialDNS(ctx context.Context, network, _ string) (net.Conn, error) {
	t := c.tunnel()
	if t == nil {
		return nil, ErrClosed
	}
	ap := netip.AddrPortFrom(c.dns[0], 53)
	fa, proto := fullAddr(ap)
	if strings.HasPrefix(network, "tcp") {
		return gonet.DialContextTCP(ctx, t.stack, fa, proto)
	}
	return gonet.DialUDP(t.stack, nil, &fa, proto)
}

func (c *Client) tunnel() *netTUN {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tun
}

func fullAddr(ap netip.AddrPort) (tcpip.FullAddress, tcpip.NetworkProtocolNumber) {
	proto := ipv4.ProtocolNumber
	if ap.Addr().Is6() {
		proto = ipv6.ProtocolNumber
	}
	return tcpip.FullAddress{NIC: nicID, Addr: tcpip.AddrFromSlice(ap.Addr().AsSlice()), Port: ap.Port()}, proto
}

// lookup resolves a destination name through the tunnel, keeping the
// addresses of the families the interface has, IPv4 first.
func lookup(ctx context.Context, t *netTUN, res *net.Resolver, name string) ([]netip.Addr, error) {
	ips, err := res.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil, err
	}
	var v4, v6 []netip.Addr
	for _, ip := range ips {
		ip = ip.Unmap()
		switch {
		case ip.Is4() && t.hasV4:
			v4 = append(v4, ip)
		case ip.Is6() && t.hasV6:
			v6 = append(v6, ip)
		}
	}
	if out := append(v4, v6...); len(out) > 0 {
		return out, nil
	}
	return nil, fmt.Errorf("no address of a family the interface has")
}

// DialContext opens a TCP connection to dst through the tunnel. A name is
// resolved through the tunnel by the node's DNS servers.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if network != "" && network != "tcp" {
		return nil, fmt.Errorf("wireguard: dial %s: network %q not supported", dst, network)
	}
	t, res, err := c.start(ctx)
	if err != nil {
		return nil, err
	}
	ips := []netip.Addr{dst.IP.Unmap()}
	if dst.IsName() {
		if ips, err = lookup(ctx, t, res, dst.Name); err != nil {
			return nil, fmt.Errorf("wireguard: %s: resolve %s through the tunnel: %w%s", c.name, dst.Name, err, c.noHandshake())
		}
	}
	var conn *gonet.TCPConn
	for i, ip := range ips {
		fa, proto := fullAddr(netip.AddrPortFrom(ip, dst.Port))
		conn, err = gonet.DialContextTCP(ctx, t.stack, fa, proto)
		if err == nil || ctx.Err() != nil || i == 1 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("wireguard: %s: dial %s: %w%s", c.name, dst, err, c.noHandshake())
	}
	fc := &tcpConn{TCPConn: conn, flows: &c.flows}
	if !c.flows.Add(fc) {
		conn.Close()
		return nil, ErrClosed
	}
	return fc, nil
}

// noHandshake explains a failed dial when no handshake with the first
// peer has completed (a wrong key, a blocked port, a peer that is down).
func (c *Client) noHandshake() string {
	c.mu.Lock()
	dev := c.dev
	c.mu.Unlock()
	if dev == nil {
		return ""
	}
	s, err := dev.IpcGet()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "last_handshake_time_sec="); ok {
			if n, _ := strconv.ParseInt(v, 10, 64); n != 0 {
				return ""
			}
			return " (no handshake with the peer has completed)"
		}
	}
	return ""
}

// tcpConn is a stream through the tunnel, forgotten by Flows on Close.
type tcpConn struct {
	*gonet.TCPConn
	flows *outbound.Flows
	once  sync.Once
}

func (c *tcpConn) Close() error {
	c.once.Do(func() { c.flows.Remove(c) })
	return c.TCPConn.Close()
}

// ListenPacket opens a UDP endpoint in the tunnel for a session whose
// datagrams go to dst's address family (IPv4 for a name when the
// interface has an IPv4 address).
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	t, res, err := c.start(ctx)
	if err != nil {
		return nil, err
	}
	v6 := dst.IP.Unmap().Is6() || (dst.IsName() && !t.hasV4)
	proto := tcpip.NetworkProtocolNumber(ipv4.ProtocolNumber)
	if v6 {
		proto = ipv6.ProtocolNumber
	}
	uc, err := gonet.DialUDP(t.stack, nil, nil, proto)
	if err != nil {
		return nil, fmt.Errorf("wireguard: %s: udp for %s: %w", c.name, dst, err)
	}
	pc := &packetConn{UDPConn: uc, t: t, res: res, v6: v6, flows: &c.flows}
	if !c.flows.Add(pc) {
		uc.Close()
		return nil, ErrClosed
	}
	return pc, nil
}

// NetworkChanged moves the device to a new socket (from the Dialer, so on
// the new default interface in TUN mode) and sends each peer a keepalive
// from it, so that the peer learns the new address at once (WireGuard
// roams on any authenticated packet). Sessions whose keys expired while
// the machine slept are renegotiated by wireguard-go on the next packet.
func (c *Client) NetworkChanged() {
	c.mu.Lock()
	dev := c.dev
	c.mu.Unlock()
	if dev == nil {
		return
	}
	if err := dev.BindUpdate(); err != nil {
		return // the next BindUpdate or flow retries; nothing else to do here
	}
	dev.SendKeepalivesToPeersWithCurrentKeypair()
}

// Close closes every flow and the device.
func (c *Client) Close() error {
	c.flows.Close()
	c.mu.Lock()
	dev := c.dev
	c.closed, c.dev, c.tun = true, nil, nil
	c.mu.Unlock()
	if dev != nil {
		dev.Close()
	}
	return nil
}
