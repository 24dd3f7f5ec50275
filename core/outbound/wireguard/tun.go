package wireguard

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.zx2c4.com/wireguard/tun"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// netTUN is a tun.Device whose other side is a gVisor stack in this
// process: what the stack sends, the WireGuard device reads and seals;
// what the device opens, it writes into the stack. No kernel interface,
// no privileges.
//
// wireguard-go's own tun/netstack hands packets over through a
// notification and an unbuffered channel that Close closes while a
// notifier may still be sending on it; here the device's reader takes
// packets from the endpoint's queue itself, in batches, and Close cancels
// that read.
type netTUN struct {
	ep     *channel.Endpoint
	stack  *stack.Stack
	mtu    int
	events chan tun.Event
	ctx    context.Context // cancelled by Close: ends a blocked Read
	cancel context.CancelFunc
	hasV4  bool
	hasV6  bool
}

const (
	nicID = 1
	// tunBatch is how many packets one Read may return, so that the
	// device seals and sends them as one batch.
	tunBatch = 64
	// queueLen bounds the packets the stack may queue for the device
	// (1024 is wireguard-go's netstack's). When it is full, packets are
	// dropped and TCP backs off.
	queueLen = 1024
	// TCP buffer limits per connection: buffers start small and
	// auto-tune (receive) or grow (send) toward the maximum only on busy
	// connections. 1 MiB still fills a 100 Mbit/s path with 80 ms RTT.
	// Starting at 128 KiB, 500 connections moving 256 KiB each way at once
	// peaked at 131 MiB RSS (wgbench).
	tcpBufDefault = 32 << 10
	tcpBufMax     = 1 << 20
)

func newNetTUN(addrs []netip.Prefix, mtu int) (*netTUN, error) {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
		HandleLocal:        true,
	})
	t := &netTUN{ep: channel.New(queueLen, uint32(mtu), ""), stack: s, mtu: mtu, events: make(chan tun.Event, 1)}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	fail := func(what string, e tcpip.Error) (*netTUN, error) {
		t.Close()
		return nil, fmt.Errorf("netstack: %s: %s", what, e)
	}
	sack := tcpip.TCPSACKEnabled(true)
	if e := s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack); e != nil {
		return fail("enable SACK", e)
	}
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4 << 10, Default: tcpBufDefault, Max: tcpBufMax}
	if e := s.SetTransportProtocolOption(tcp.ProtocolNumber, &rcv); e != nil {
		return fail("receive buffer", e)
	}
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: 4 << 10, Default: tcpBufDefault, Max: tcpBufMax}
	if e := s.SetTransportProtocolOption(tcp.ProtocolNumber, &snd); e != nil {
		return fail("send buffer", e)
	}
	moderate := tcpip.TCPModerateReceiveBufferOption(true)
	if e := s.SetTransportProtocolOption(tcp.ProtocolNumber, &moderate); e != nil {
		return fail("receive buffer auto-tuning", e)
	}
	if e := s.CreateNIC(nicID, t.ep); e != nil {
		return fail("create NIC", e)
	}
	for _, p := range addrs {
		proto := ipv4.ProtocolNumber
		if p.Addr().Is6() {
			proto, t.hasV6 = ipv6.ProtocolNumber, true
		} else {
			t.hasV4 = true
		}
		pa := tcpip.ProtocolAddress{Protocol: proto, AddressWithPrefix: tcpip.AddrFromSlice(p.Addr().AsSlice()).WithPrefix()}
		if e := s.AddProtocolAddress(nicID, pa, stack.AddressProperties{}); e != nil {
			return fail("add address "+p.String(), e)
		}
	}
	if t.hasV4 {
		s.AddRoute(tcpip.Route{Destination: header.IPv4EmptySubnet, NIC: nicID})
	}
	if t.hasV6 {
		s.AddRoute(tcpip.Route{Destination: header.IPv6EmptySubnet, NIC: nicID})
	}
	t.events <- tun.EventUp
	return t, nil
}

func (t *netTUN) Name() (string, error) { return "skiff-wg", nil }
func (t *netTUN) File() *os.File        { return nil }
func (t *netTUN) Events() <-chan tun.Event {
	return t.events
}
func (t *netTUN) MTU() (int, error) { return t.mtu, nil }
func (t *netTUN) BatchSize() int    { return tunBatch }

// Read waits for the stack's next packet and returns it with whatever
// else is queued behind it, up to len(bufs).
func (t *netTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	pkt := t.ep.ReadContext(t.ctx)
	if pkt == nil {
		return 0, os.ErrClosed
	}
	n := 0
	for {
		sizes[n] = copyPacket(bufs[n][offset:], pkt)
		n++
		if n == len(bufs) {
			return n, nil
		}
		if pkt = t.ep.Read(); pkt == nil {
			return n, nil
		}
	}
}

// copyPacket copies pkt into b and releases it.
func copyPacket(b []byte, pkt *stack.PacketBuffer) int {
	v := pkt.ToView()
	pkt.DecRef()
	n, _ := v.Read(b)
	v.Release()
	return n
}

// Write hands the device's opened packets to the stack.
func (t *netTUN) Write(bufs [][]byte, offset int) (int, error) {
	for _, b := range bufs {
		p := b[offset:]
		if len(p) == 0 {
			continue
		}
		var proto tcpip.NetworkProtocolNumber
		switch p[0] >> 4 {
		case 4:
			proto = header.IPv4ProtocolNumber
		case 6:
			proto = header.IPv6ProtocolNumber
		default:
			return 0, syscall.EAFNOSUPPORT
		}
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(p)})
		t.ep.InjectInbound(proto, pkt)
		pkt.DecRef()
	}
	return len(bufs), nil
}

// Close stops the stack; a blocked Read returns os.ErrClosed. The device
// calls it once, from its own Close.
func (t *netTUN) Close() error {
	t.cancel()
	close(t.events) // ends the device's event reader
	t.stack.RemoveNIC(nicID)
	t.stack.Close()
	t.ep.Close()
	t.stack.Wait()
	return nil
}
