package netstack

import (
	"slices"
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

func TestSendBufShare(t *testing.T) {
	for _, c := range []struct {
		total, open, want int
	}{
		{DefaultTCPBufferBudget, 0, 0}, // auto-tuned
		{DefaultTCPBufferBudget, 1, 0},
		{DefaultTCPBufferBudget, 16, 0},
		{DefaultTCPBufferBudget, 32, 0}, // 256 KiB: the maximum
		{DefaultTCPBufferBudget, 33, 128 << 10},
		{DefaultTCPBufferBudget, 128, 64 << 10},
		{DefaultTCPBufferBudget, 500, tcpSendBufFloor},
		{DefaultTCPBufferBudget, 2000, tcpSendBufFloor},
		{1 << 30, 1000, 0},
		{1, 1, tcpSendBufFloor},
	} {
		if got := sendBufShare(c.total, c.open); got != c.want {
			t.Errorf("sendBufShare(%d, %d) = %d, want %d", c.total, c.open, got, c.want)
		}
	}
}

// sizes records the send buffer sizes the budget sets on one endpoint.
type sizes struct{ set []int64 }

func (s *sizes) SetSendBufferSize(size int64, notify bool) {
	if !notify {
		panic("set without waking the writers")
	}
	s.set = append(s.set, size)
}

// TestBufferBudgetSetsSendBuffers checks the send side: joined endpoints
// are left to auto-tuning while few connections are open, set to the share
// once many are, set again as the share changes, and not after they left.
func TestBufferBudgetSetsSendBuffers(t *testing.T) {
	s := stack.New(stack.Options{TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol}})
	defer s.Destroy()
	b := newBufferBudget(s, 0)
	open := func(n int) {
		t.Helper()
		for range n {
			if err := b.add(1); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeN := func(n int) {
		t.Helper()
		for range n {
			if err := b.add(-1); err != nil {
				t.Fatal(err)
			}
		}
	}
	var early, late, gone sizes
	open(1)
	b.join(&early)
	open(15)
	if len(early.set) != 0 {
		t.Fatalf("16 open: set %v, want auto-tuning", early.set)
	}
	open(484) // 500
	b.join(&late)
	b.join(&gone)
	b.leave(&gone)
	if want := []int64{128 << 10, 64 << 10, 32 << 10, 16 << 10}; !slices.Equal(early.set, want) {
		t.Errorf("joined at 1, 500 open: set %v, want %v", early.set, want)
	}
	if want := []int64{16 << 10}; !slices.Equal(late.set, want) {
		t.Errorf("joined at 500: set %v, want %v", late.set, want)
	}
	closeN(400) // 100: 80 KiB, rounded down
	if want := []int64{16 << 10, 32 << 10, 64 << 10}; !slices.Equal(late.set, want) {
		t.Errorf("joined at 500, down to 100 open: set %v, want %v", late.set, want)
	}
	if want := []int64{16 << 10}; !slices.Equal(gone.set, want) {
		t.Errorf("left at 500: set %v, want only %v, at its join", gone.set, want)
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
