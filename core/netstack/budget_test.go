package netstack

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

func TestRecvBufLimit(t *testing.T) {
	for _, c := range []struct {
		total, open, want int
	}{
		{DefaultTCPBufferBudget, 0, tcpRecvBufCeil},
		{DefaultTCPBufferBudget, 1, tcpRecvBufCeil},
		{DefaultTCPBufferBudget, 16, 512 << 10},
		{DefaultTCPBufferBudget, 17, 256 << 10}, // 481 KiB, rounded down
		{DefaultTCPBufferBudget, 64, 128 << 10},
		{DefaultTCPBufferBudget, 256, 32 << 10},
		{DefaultTCPBufferBudget, 500, tcpRecvBufFloor},
		{DefaultTCPBufferBudget, 100000, tcpRecvBufFloor},
		{1 << 30, 1, tcpRecvBufCeil},
		{1, 1, tcpRecvBufFloor},
	} {
		if got := recvBufLimit(c.total, c.open); got != c.want {
			t.Errorf("recvBufLimit(%d, %d) = %d, want %d", c.total, c.open, got, c.want)
		}
	}
}

// TestBufferBudgetSetsTheStack checks what gVisor reads back after
// connections open and close: the ranges shrink with the count, their
// defaults within them, and come back when the connections end.
func TestBufferBudgetSetsTheStack(t *testing.T) {
	s := stack.New(stack.Options{TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol}})
	defer s.Destroy()
	b := newBufferBudget(s, 0)
	ranges := func() (tcpip.TCPReceiveBufferSizeRangeOption, tcpip.TCPSendBufferSizeRangeOption) {
		var r tcpip.TCPReceiveBufferSizeRangeOption
		var w tcpip.TCPSendBufferSizeRangeOption
		if err := s.TransportProtocolOption(tcp.ProtocolNumber, &r); err != nil {
			t.Fatal(err)
		}
		if err := s.TransportProtocolOption(tcp.ProtocolNumber, &w); err != nil {
			t.Fatal(err)
		}
		return r, w
	}
	check := func(open, wantMax int) {
		t.Helper()
		r, w := ranges()
		if r.Max != wantMax || w.Max != defaultTCPSendBufMax || w.Default > wantMax/2 {
			t.Errorf("%d open: receive max %d, send %d..%d; want max %d, send default at most %d, send max %d",
				open, r.Max, w.Default, w.Max, wantMax, wantMax/2, defaultTCPSendBufMax)
		}
		if r.Default > r.Max || w.Default > w.Max || r.Default < r.Min || w.Default < w.Min {
			t.Errorf("%d open: defaults outside their ranges: %+v %+v", open, r, w)
		}
		if got := b.initial(); got != r.Default {
			t.Errorf("%d open: initial %d, range default %d", open, got, r.Default)
		}
	}
	if err := b.add(0); err != nil {
		t.Fatal(err)
	}
	check(0, tcpRecvBufCeil)
	for i := 1; i <= 500; i++ {
		if err := b.add(1); err != nil {
			t.Fatal(err)
		}
	}
	check(500, tcpRecvBufFloor)
	for i := 500; i > 16; i-- {
		if err := b.add(-1); err != nil {
			t.Fatal(err)
		}
	}
	check(16, 512<<10)
}
