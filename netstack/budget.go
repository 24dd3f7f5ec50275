package netstack

import (
	"fmt"
	"math/bits"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// DefaultTCPBufferBudget is Options.TCPBufferBudget's default: how many
// bytes of receive buffer all TCP connections of a stack may grow to
// together (new connections' send buffers start at half their receive
// buffer's share).
//
// In TUN mode the bytes an app sends wait in the stack's receive buffer
// until the upstream takes them, and the upstream is the bottleneck, so
// every busy upload fills its receive buffer to whatever size auto-tuning
// reached. In proxy mode the same bytes wait in the kernel's socket buffer
// of the app and are no one's RSS; here they are ours. 500 busy uploads
// through Hysteria2 held 260-270 MiB of gVisor chunks, each endpoint with
// the 1 MiB receive buffer gVisor's forwarder gives it. Sharing one budget
// keeps the 16 busy streams of a bulk transfer at their full 512 KiB
// (8 MiB / 16), and gives 500 the floor, 32 KiB each (16 MiB at most).
const DefaultTCPBufferBudget = 8 << 20

// Per-connection receive buffer bounds under the budget.
//
// The floor keeps the advertised window (half the receive buffer, the
// other half is gVisor's allowance for chunk overhead) above one segment
// of a 9000-byte MTU, so that the app's kernel never waits for a window
// it cannot fill with a full segment.
//
// The send floor is two 8 KiB chunks; the writer is woken when half of it
// is free, so a relay's 16 KiB write goes in at most two steps.
const (
	tcpRecvBufFloor = 32 << 10
	tcpRecvBufCeil  = defaultTCPRecvBufMax
	tcpSendBufFloor = 16 << 10
)

// bufferBudget sets the stack-wide TCP buffer limits from how many
// connections are open: the receive buffer's maximum is the budget divided
// among them, rounded down to a power of two and kept between the floor
// and the ceiling. gVisor reads the maximum each time it auto-tunes a
// buffer and the default when it makes an endpoint, so new connections
// start smaller and busy ones stop growing at once. A receive buffer that
// grew earlier is not shrunk (gVisor never shrinks one: data already
// allowed in may be in flight).
//
// Send buffers share the budget too, but each is set on its endpoint
// (join), not through the stack's maximum. What a relay writes towards the
// app waits in the send buffer until the app's kernel acknowledges it, and
// gVisor's auto-tuning sizes it to twice the congestion window: with the
// TUN's 9000-byte MTU that is 175 KiB from the first acknowledgement, the
// 256 KiB maximum soon after. 500 busy downloads through the TUN held
// 26 MiB of gVisor chunks in send buffers at the peak (heap profile,
// VLESS+WS+TLS). The maximum cannot be lowered instead: gVisor's send
// auto-tuning clamps a buffer to the maximum it reads each time, so a
// lower maximum shrinks buffers already in use, and a writer that blocked
// on the larger size is then never woken (the wake-up waits for half the
// old size to be free, but the size is only updated on a wake-up): in
// test, 500 idle VLESS connections through the TUN stopped answering. A
// size set on the endpoint (SO_SNDBUF) turns its auto-tuning off and takes
// effect at once, the wake-up measured against it, so shrinking one that is
// in use is safe. While the budget's share is the whole maximum (32
// connections or fewer at 8 MiB), endpoints keep auto-tuning; past that,
// every joined endpoint is set to the share, and set again when the share
// changes (up, too, as connections close).
//
// Only a change of the rounded figure touches the stack or the endpoints,
// so most opens and closes only count.
type bufferBudget struct {
	s     *stack.Stack
	total int

	mu      sync.Mutex
	open    int // connections counted
	per     int // receive buffer maximum now set; 0 none yet
	send    int // send buffer set on joined endpoints; 0 auto-tuned
	members map[sendBufferSetter]struct{}
}

// sendBufferSetter is the part of an endpoint's socket options the budget
// sets (*tcpip.SocketOptions).
type sendBufferSetter interface {
	SetSendBufferSize(size int64, notify bool)
}

func newBufferBudget(s *stack.Stack, total int) *bufferBudget {
	if total <= 0 {
		total = DefaultTCPBufferBudget
	}
	return &bufferBudget{s: s, total: total, members: map[sendBufferSetter]struct{}{}}
}

// add counts delta connections (+1 opening, -1 closed) and sets the limits
// the new count calls for.
func (b *bufferBudget) add(delta int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open += delta
	if send := sendBufShare(b.total, b.open); send != b.send {
		b.send = send
		for so := range b.members {
			setSendBuffer(so, send)
		}
	}
	per := recvBufLimit(b.total, b.open)
	if per == b.per {
		return nil
	}
	if err := setBufferLimits(b.s, per); err != nil {
		return err
	}
	b.per = per
	return nil
}

// initial is the receive buffer a new connection starts with: the
// default of the range now set. (The forwarder starts every endpoint at
// the floor, whatever the range says.)
func (b *bufferBudget) initial() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return min(defaultTCPRecvBufInit, b.per)
}

// join takes a new connection's endpoint into the send side of the
// budget (after add counted it): it gets the share now set, and the next
// ones until leave.
func (b *bufferBudget) join(so sendBufferSetter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.members[so] = struct{}{}
	if b.send != 0 {
		setSendBuffer(so, b.send)
	}
}

// leave drops an endpoint joined before; its connection is still counted
// until add(-1).
func (b *bufferBudget) leave(so sendBufferSetter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.members, so)
}

// setSendBuffer sets an endpoint's send buffer to size bytes and wakes its
// writers if that leaves room; 0 is a no-op (auto-tuned).
func setSendBuffer(so sendBufferSetter, size int) {
	if size != 0 {
		so.SetSendBufferSize(int64(size), true)
	}
}

// sendBufShare is the send buffer for each of open connections sharing
// total bytes: the share rounded down to a power of two, at least
// tcpSendBufFloor; 0 (auto-tuning) while the share reaches gVisor's
// maximum.
func sendBufShare(total, open int) int {
	per := total / max(open, 1)
	if per >= defaultTCPSendBufMax {
		return 0
	}
	per = max(per, tcpSendBufFloor)
	return 1 << (bits.Len(uint(per)) - 1)
}

// recvBufLimit is the receive buffer maximum for open connections sharing
// total bytes.
func recvBufLimit(total, open int) int {
	per := total / max(open, 1)
	per = min(max(per, tcpRecvBufFloor), tcpRecvBufCeil)
	return 1 << (bits.Len(uint(per)) - 1) // a power of two at or below
}

// setBufferLimits sets the stack's TCP buffer ranges for a receive buffer
// maximum of per bytes, the defaults lowered to fit (the send default to
// half of it).
func setBufferLimits(s *stack.Stack, per int) error {
	opts := []tcpip.SettableTransportProtocolOption{
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: tcp.MinBufferSize, Default: min(defaultTCPRecvBufInit, per), Max: per},
		&tcpip.TCPSendBufferSizeRangeOption{Min: tcp.MinBufferSize, Default: min(defaultTCPSendBufInit, per/2), Max: defaultTCPSendBufMax},
	}
	for _, o := range opts {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			return fmt.Errorf("netstack: set TCP option %T: %s", o, err)
		}
	}
	return nil
}
