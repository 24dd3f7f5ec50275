package stats

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

func meta(dst string) *flow.Metadata {
	a, err := flow.ParseAddr(dst)
	if err != nil {
		panic(err)
	}
	return &flow.Metadata{
		Network:     flow.TCP,
		Source:      netip.MustParseAddrPort("127.0.0.1:5555"),
		Destination: a,
		Inbound:     "socks",
	}
}

func TestConnectionTable(t *testing.T) {
	s := New()
	closed := map[uint64]bool{}
	a := s.Track(meta("example.com:443"), "hy2", nil)
	a.close = func() { closed[a.ID()] = true }
	b := s.Track(meta("10.0.0.1:80"), "vless", func() {})
	b.close = func() { closed[b.ID()] = true }

	a.Up.Add(100)
	a.Down.Add(1000)
	b.Up.Add(7)

	list := s.Connections()
	if len(list) != 2 || list[0].ID != a.ID() || list[1].ID != b.ID() {
		t.Fatalf("Connections = %+v", list)
	}
	if c := list[0]; c.Destination != "example.com:443" || c.Outbound != "hy2" || c.Up != 100 || c.Down != 1000 ||
		c.Source != "127.0.0.1:5555" || c.Inbound != "socks" || c.Network != "tcp" || c.Start.IsZero() {
		t.Errorf("first connection = %+v", c)
	}
	if up, down := s.Totals(); up != 107 || down != 1000 {
		t.Errorf("Totals = %d, %d; want 107, 1000", up, down)
	}
	per := s.OutboundTotals()
	if per["hy2"] != [2]int64{100, 1000} || per["vless"] != [2]int64{7, 0} {
		t.Errorf("OutboundTotals = %v", per)
	}

	if !s.CloseConnection(b.ID()) || !closed[b.ID()] || closed[a.ID()] {
		t.Errorf("CloseConnection(%d): closed = %v", b.ID(), closed)
	}
	if s.CloseConnection(999) {
		t.Error("CloseConnection of an unknown id reported true")
	}
	b.Done()
	if n := s.ConnCount(); n != 1 {
		t.Errorf("ConnCount after Done = %d, want 1", n)
	}
	// A finished connection's bytes stay in the totals.
	if up, _ := s.Totals(); up != 107 {
		t.Errorf("Totals up after Done = %d, want 107", up)
	}
	s.CloseAll()
	if !closed[a.ID()] {
		t.Error("CloseAll did not close the remaining connection")
	}
}

func TestSampler(t *testing.T) {
	s := New()
	c := s.Track(meta("1.1.1.1:53"), "direct", nil)
	t0 := time.Unix(1000, 0)
	s.sample(t0)
	if got := s.Series(); len(got) != 0 {
		t.Fatalf("Series after first sample = %v, want empty", got)
	}
	for i := 1; i <= Window+10; i++ {
		c.Up.Add(int64(i) * 1000)
		c.Down.Add(2000)
		s.sample(t0.Add(time.Duration(i) * time.Second))
	}
	series := s.Series()
	if len(series) != Window {
		t.Fatalf("len(Series) = %d, want %d", len(series), Window)
	}
	// Oldest first: the first kept sample is second 11.
	if series[0].Up != 11_000 || series[0].Down != 2000 || !series[0].Time.Equal(t0.Add(11*time.Second)) {
		t.Errorf("oldest sample = %+v", series[0])
	}
	last := series[Window-1]
	if last.Up != int64(Window+10)*1000 || last != s.Rate() {
		t.Errorf("newest sample = %+v, Rate = %+v", last, s.Rate())
	}
	// Rates are per second even when a tick comes late.
	c.Up.Add(5000)
	s.sample(t0.Add(time.Duration(Window+10)*time.Second + 2*time.Second))
	if r := s.Rate(); r.Up != 2500 {
		t.Errorf("rate over 2 s = %d, want 2500", r.Up)
	}
}

func TestReadMemory(t *testing.T) {
	keep := make([]byte, 8<<20)
	for i := range keep {
		keep[i] = 1
	}
	stop := make(chan struct{})
	const parked = 10
	for range parked {
		go func() { <-stop }()
	}
	m := ReadMemory()
	close(stop)
	runtime.KeepAlive(keep)
	if m.Heap < 8<<20 || m.RSS < 8<<20 {
		t.Errorf("ReadMemory = %+v, want at least the 8 MiB held", m)
	}
	if m.Goroutines < parked+1 {
		t.Errorf("ReadMemory().Goroutines = %d, want at least the %d parked and this one", m.Goroutines, parked)
	}
	if runtime.GOOS == "linux" {
		if _, ok := osRSS(); !ok {
			t.Error("osRSS failed on Linux")
		}
	}
}

func TestProgram(t *testing.T) {
	for _, tc := range []struct{ process, want string }{
		{"", ""},
		{flow.ProcessUnknown, ""},
		{"/usr/lib/firefox/firefox", "firefox"},
	} {
		if got := (ConnInfo{Process: tc.process}).Program(); got != tc.want {
			t.Errorf("Program of %q = %q, want %q", tc.process, got, tc.want)
		}
	}
	// A rule's look-up is in the table from the start.
	s := New()
	m := meta("1.1.1.1:443")
	m.Process = "/usr/bin/curl"
	c := s.Track(m, "proxy", func() {})
	defer c.Done()
	if got := s.Connections()[0].Program(); got != "curl" {
		t.Errorf("a tracked flow's program = %q, want curl", got)
	}
	s.SetProcess(c.ID(), "/usr/bin/wget")
	if got := s.Connections()[0].Program(); got != "wget" {
		t.Errorf("after SetProcess: %q, want wget", got)
	}
}
