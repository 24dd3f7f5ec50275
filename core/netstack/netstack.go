// Package netstack terminates the apps' TCP and UDP inside Skiff: a gVisor
// network stack runs on top of the TUN device, and every TCP connection or
// UDP session the apps start toward any address is handed, with its original
// destination, to a flow.Handler (the engine) to be routed and relayed.
//
// A TCP connection is answered (SYN-ACK) only once the handler has connected
// its upstream, so a failed upstream is an RST, never a connection that is
// accepted and then dropped. UDP sessions live in a NAT table keyed by the
// app's address and the destination, with an idle time-out. ICMP echo is
// answered at once by the stack itself (see icmp.go).
//
// DNS is not special here: a query to port 53 of any address is a UDP (or
// TCP) flow like any other, and the engine's handler recognises the port and
// answers it (DNS hijack, fake IPs). The netstack knows nothing of fake IPs
// either: the engine rewrites Metadata.Destination as it needs.
package netstack

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.zx2c4.com/wireguard/tun"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
)

// Defaults for Options.
const (
	DefaultUDPTimeout     = 60 * time.Second
	DefaultMaxInFlight    = 1024
	defaultTCPRecvBufMax  = 512 << 10
	defaultTCPSendBufMax  = 256 << 10
	defaultTCPRecvBufInit = 128 << 10
	defaultTCPSendBufInit = 128 << 10
	nicID                 = tcpip.NICID(1)
)

// Options tunes a Stack. The zero value is ready to use.
type Options struct {
	// MTU of the device; 0 asks the device.
	MTU int
	// UDPTimeout closes a UDP session with no traffic either way for this
	// long (DefaultUDPTimeout when 0).
	UDPTimeout time.Duration
	// MaxInFlight bounds the TCP connections waiting for their upstream
	// (DefaultMaxInFlight when 0); SYNs beyond it are dropped and retried
	// by the app.
	MaxInFlight int
	// Logger receives errors of the device and per-flow failures at debug
	// level; nil discards them.
	Logger *slog.Logger
	// Panics counts and logs the panics recovered while serving a flow; the
	// flows carry it in their context (see package guard). May be nil.
	Panics *guard.Reporter
	// Restore, when set, puts the machine's routes back before a panic in
	// the stack's own packet loops ends the process.
	Restore func()
	// TCPBufferBudget is how many bytes of receive buffer all TCP
	// connections may grow to together (DefaultTCPBufferBudget when 0);
	// see bufferBudget.
	TCPBufferBudget int
}

// Stack is a gVisor network stack bound to a TUN device.
type Stack struct {
	dev     tun.Device
	handler flow.Handler
	opts    Options
	log     *slog.Logger

	s      *stack.Stack
	link   *linkEndpoint
	udp    *udpTable
	budget *bufferBudget

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // per-flow goroutines

	ipID atomic.Uint32 // IPv4 identification of the UDP replies built here

	closeOnce sync.Once
}

// New starts a stack on dev that hands every flow to h. The Stack owns dev
// from then on: Close closes it.
func New(dev tun.Device, h flow.Handler, opts Options) (*Stack, error) {
	if opts.MTU == 0 {
		m, err := dev.MTU()
		if err != nil {
			return nil, fmt.Errorf("netstack: device MTU: %w", err)
		}
		opts.MTU = m
	}
	if opts.UDPTimeout == 0 {
		opts.UDPTimeout = DefaultUDPTimeout
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(guard.WithReporter(context.Background(), opts.Panics))
	n := &Stack{dev: dev, handler: h, opts: opts, log: log, ctx: ctx, cancel: cancel}

	n.s = stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
		HandleLocal:        false,
	})
	n.budget = newBufferBudget(n.s, opts.TCPBufferBudget)
	if err := n.tune(); err != nil {
		n.s.Destroy()
		cancel()
		return nil, err
	}
	n.link = newLinkEndpoint(dev, uint32(opts.MTU), func(err error) {
		log.Error("netstack: device stopped", "err", err)
	})
	n.link.restore = opts.Restore
	if err := n.s.CreateNICWithOptions(nicID, n.link, stack.NICOptions{Name: "tun"}); err != nil {
		n.s.Destroy()
		cancel()
		return nil, fmt.Errorf("netstack: create NIC: %s", err)
	}
	// Promiscuous: accept packets to every address, not only the device's.
	// Spoofing: answer from those addresses.
	n.s.SetPromiscuousMode(nicID, true)
	n.s.SetSpoofing(nicID, true)
	n.s.SetRouteTable([]tcpip.Route{
		{Destination: header.IPv4EmptySubnet, NIC: nicID},
		{Destination: header.IPv6EmptySubnet, NIC: nicID},
	})

	// The forwarder gives every endpoint it makes this receive buffer,
	// whatever the stack's range says (0 would be gVisor's 1 MiB, which
	// auto-tuning never shrinks: 500 busy uploads held 270 MiB); accept
	// raises it to the budget's default. See bufferBudget.
	fwd := tcp.NewForwarder(n.s, tcpRecvBufFloor, opts.MaxInFlight, n.handleTCP)
	n.s.SetTransportProtocolHandler(tcp.ProtocolNumber, fwd.HandlePacket)
	n.udp = newUDPTable(n)
	n.s.SetTransportProtocolHandler(udp.ProtocolNumber, n.udp.handlePacket)
	n.s.SetTransportProtocolHandler(icmp.ProtocolNumber4, n.handleICMPv4)
	n.s.SetTransportProtocolHandler(icmp.ProtocolNumber6, n.handleICMPv6)

	n.link.start()
	return n, nil
}

// tune sets the TCP options: auto-tuned buffers, SACK, and no Nagle delay
// (the apps' own stacks already batch).
//
// The buffers are small on purpose, and shared under a budget (see
// bufferBudget). Their peer is an app on this machine, a round trip of well
// under a millisecond even under load, so 512 KiB of receive window and
// 256 KiB of send buffer per connection already carry several Gbps each;
// the long-haul window is the upstream socket's concern.
// Larger limits (8 and 6 MiB, as gVisor's users often set) only let the
// auto-tuning park megabytes per connection in the stack whenever the
// upstream is the bottleneck, i.e. always.
func (n *Stack) tune() error {
	opts := []tcpip.SettableTransportProtocolOption{
		new(tcpip.TCPSACKEnabled),
		new(tcpip.TCPModerateReceiveBufferOption),
		// TIME-WAIT for one second, not gVisor's 60: the app's kernel keeps
		// no TIME-WAIT for these connections (the stack is the far end), so
		// at a few connections a second it soon reuses a source port. While
		// gVisor still holds the old connection in TIME-WAIT, a new SYN on
		// that 4-tuple reaches no listener (the forwarder is not one) and
		// is dropped: the app sees its connect time out.
		new(tcpip.TCPTimeWaitTimeoutOption),
	}
	*opts[0].(*tcpip.TCPSACKEnabled) = true
	*opts[1].(*tcpip.TCPModerateReceiveBufferOption) = true
	*opts[2].(*tcpip.TCPTimeWaitTimeoutOption) = tcpip.TCPTimeWaitTimeoutOption(time.Second)
	for _, o := range opts {
		if err := n.s.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			return fmt.Errorf("netstack: set TCP option %T: %s", o, err)
		}
	}
	return n.budget.add(0) // the buffer ranges, for no connection yet
}

// Close stops the stack: open flows are ended, the device is closed, and
// Close waits for the stack's goroutines. It is safe to call more than once.
func (n *Stack) Close() error {
	var err error
	n.closeOnce.Do(func() {
		n.cancel()
		n.udp.closeAll()
		err = n.link.close()
		n.s.Close()
		// Handlers end their flows when ctx ends; one that does not is
		// left behind rather than hanging the caller.
		waited := make(chan struct{})
		go func() { n.wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			n.log.Warn("netstack: flows still open 5s after close")
		}
		n.s.Destroy()
	})
	if err != nil {
		return fmt.Errorf("netstack: close device: %w", err)
	}
	return nil
}

// fullAddr returns the netip form of a gVisor address and port.
func addrPort(a tcpip.Address, port uint16) netip.AddrPort {
	ip, _ := netip.AddrFromSlice(a.AsSlice())
	return netip.AddrPortFrom(ip.Unmap(), port)
}
