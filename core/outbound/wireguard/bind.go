package wireguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"

	"golang.zx2c4.com/wireguard/conn"

	"github.com/skiffvpn/skiff/core/outbound"
)

// Bind is a conn.Bind whose one UDP socket comes from an outbound.Dialer
// (so that in TUN mode it bypasses the tunnel as the other outbounds'
// sockets do) and which handles WireGuard's reserved bytes: bytes 1..3 of
// every message after the type byte, zero in the protocol, which
// Cloudflare WARP uses to route (its client id). Send writes a peer's
// reserved bytes into every message to it; every received message has
// them cleared, since stock wireguard-go reads the type as a 32-bit word
// and drops a message whose reserved bytes are set.
//
// It is exported for tests that run a WireGuard peer of their own.
type Bind struct {
	dialer outbound.Dialer
	raw    bool // leave bytes 1..3 alone (AmneziaWG's message types use them)

	mu       sync.Mutex
	pc       net.PacketConn
	reserved map[netip.AddrPort][3]byte // by peer endpoint
}

// socketBuffer is the UDP socket's buffer size asked for (wireguard-go's
// StdNetBind asks for 7 MiB): with the 208 KiB default, a burst of sealed
// segments from the stack overflows it and TCP through the tunnel stalls
// on the losses.
const socketBuffer = 7 << 20

// NewBind returns a Bind on d's sockets.
func NewBind(d outbound.Dialer) *Bind {
	return &Bind{dialer: d, reserved: map[netip.AddrPort][3]byte{}}
}

// SetReserved sets the reserved bytes of messages to ep; zero clears them.
func (b *Bind) SetReserved(ep netip.AddrPort, r [3]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r == ([3]byte{}) {
		delete(b.reserved, ep)
		return
	}
	b.reserved[ep] = r
}

// Open opens the socket, on port when it is not 0.
func (b *Bind) Open(port uint16) ([]conn.ReceiveFunc, uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pc != nil {
		return nil, 0, conn.ErrBindAlreadyOpen
	}
	addr := ""
	if port != 0 {
		addr = netip.AddrPortFrom(netip.IPv6Unspecified(), port).String()
	}
	pc, err := b.dialer.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, 0, err
	}
	if uc, ok := pc.(*net.UDPConn); ok {
		// Best effort, as wireguard-go's StdNetBind: the kernel caps
		// these at net.core.[rw]mem_max.
		uc.SetReadBuffer(socketBuffer)
		uc.SetWriteBuffer(socketBuffer)
	}
	b.pc = pc
	var actual uint16
	if ua, ok := pc.LocalAddr().(*net.UDPAddr); ok {
		actual = uint16(ua.Port)
	}
	return []conn.ReceiveFunc{b.receiver(pc)}, actual, nil
}

func (b *Bind) receiver(pc net.PacketConn) conn.ReceiveFunc {
	uc, _ := pc.(*net.UDPConn)
	return func(packets [][]byte, sizes []int, eps []conn.Endpoint) (int, error) {
		var (
			n   int
			ap  netip.AddrPort
			err error
		)
		if uc != nil {
			n, ap, err = uc.ReadFromUDPAddrPort(packets[0])
		} else {
			var a net.Addr
			n, a, err = pc.ReadFrom(packets[0])
			if ua, ok := a.(*net.UDPAddr); ok {
				ap = ua.AddrPort()
			}
		}
		if err != nil {
			return 0, err
		}
		if n >= 4 && !b.raw {
			clear(packets[0][1:4])
		}
		sizes[0] = n
		eps[0] = endpoint(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		return 1, nil
	}
}

// Close closes the socket; the receive function returns net.ErrClosed.
func (b *Bind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pc == nil {
		return nil
	}
	err := b.pc.Close()
	b.pc = nil
	return err
}

// SetMark does nothing: the Dialer marks its sockets itself.
func (b *Bind) SetMark(uint32) error { return nil }

// BatchSize is 1: one datagram per system call. (A UDP socket from the
// Dialer is not batched; wireguard-go's StdNetBind would, but opens its
// own sockets.)
func (b *Bind) BatchSize() int { return 1 }

var errClosed = errors.New("wireguard: bind closed")

// Send writes bufs to ep, each with ep's reserved bytes.
func (b *Bind) Send(bufs [][]byte, ep conn.Endpoint) error {
	e, ok := ep.(endpoint)
	if !ok {
		return conn.ErrWrongEndpointType
	}
	b.mu.Lock()
	pc, r := b.pc, b.reserved[netip.AddrPort(e)]
	b.mu.Unlock()
	if pc == nil {
		return errClosed
	}
	ua := net.UDPAddrFromAddrPort(netip.AddrPort(e))
	for _, buf := range bufs {
		if len(buf) >= 4 && r != ([3]byte{}) && !b.raw {
			copy(buf[1:4], r[:])
		}
		if _, err := pc.WriteTo(buf, ua); err != nil {
			return err
		}
	}
	return nil
}

// ParseEndpoint reads "ip:port".
func (b *Bind) ParseEndpoint(s string) (conn.Endpoint, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, err
	}
	return endpoint(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())), nil
}

// endpoint is a peer's address. The source address is the socket's.
type endpoint netip.AddrPort

func (e endpoint) ClearSrc()           {}
func (e endpoint) SrcToString() string { return "" }
func (e endpoint) DstToString() string { return netip.AddrPort(e).String() }
func (e endpoint) DstToBytes() []byte {
	b, _ := netip.AddrPort(e).MarshalBinary()
	return b
}
func (e endpoint) DstIP() netip.Addr { return netip.AddrPort(e).Addr() }
func (e endpoint) SrcIP() netip.Addr { return netip.Addr{} }
