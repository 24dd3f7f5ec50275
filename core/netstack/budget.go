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
const (
	tcpRecvBufFloor = 32 << 10
	tcpRecvBufCeil  = defaultTCPRecvBufMax
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
// Send buffers only start smaller: their maximum stays fixed. gVisor's
// send auto-tuning clamps a buffer to the maximum it reads each time, so a
// lower maximum shrinks buffers already in use, and a writer that blocked
// on the larger size is then never woken (the wake-up waits for half the
// old size to be free, but the size is only updated on a wake-up): in
// test, 500 idle VLESS connections through the TUN stopped answering.
// Sent data waits there until the app's kernel acknowledges it: 500 busy
// downloads through the TUN held 26 MiB of gVisor chunks in send buffers
// at the peak (VLESS+WS+TLS). Setting each endpoint's send buffer to a
// share of the budget instead (SO_SNDBUF, which is safe to shrink in use)
// was measured and dropped: once tlsconf fitted the record buffers, the
// peak stayed at 94 MiB with or without it, and the flows held open after
// the burst held 35.4-36.0 MiB with it against 29.6-30.0 without.
//
// Only a change of the rounded figure touches the stack, so most opens and
// closes only count.
type bufferBudget struct {
	s     *stack.Stack
	total int

	mu   sync.Mutex
	open int // connections counted
	per  int // receive buffer maximum now set; 0 none yet
}

func newBufferBudget(s *stack.Stack, total int) *bufferBudget {
	if total <= 0 {
		total = DefaultTCPBufferBudget
	}
	return &bufferBudget{s: s, total: total}
}

// add counts delta connections (+1 opening, -1 closed) and sets the limits
// the new count calls for.
func (b *bufferBudget) add(delta int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open += delta
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
