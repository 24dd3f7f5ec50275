package group

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/fault"
	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/internal/nettest"
)

const mbitps = 125_000 // bytes/s in one Mbit/s

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       sample
		suspect bool
	}{
		{"idle", sample{Secs: 5, Peak: 100 * mbitps}, false},
		{"one burst after a fast past", sample{Secs: 5, Bytes: 200_000, Streams: 0, Peak: 100 * mbitps}, false},
		{"steady at its best", sample{Secs: 5, Bytes: 5 * 20 * mbitps, Streams: 1, Peak: 20 * mbitps}, false},
		{"paced download, half its best", sample{Secs: 5, Bytes: 5 * 8 * mbitps, Streams: 1, Peak: 16 * mbitps}, false},
		{"starved: 0.9 of 16 Mbit/s", sample{Secs: 5, Bytes: 5 * 0.9 * mbitps, Streams: 1, Peak: 16 * mbitps}, true},
		{"short requests only, after a fast past", sample{Secs: 5, Bytes: 5 * 0.02 * mbitps, Streams: 0, Peak: 9.5 * mbitps}, false},
		{"slow but never was fast", sample{Secs: 5, Bytes: 5 * 0.1 * mbitps, Streams: 1, Peak: 0.5 * mbitps}, false},
		{"far below the declared rate", sample{Secs: 5, Bytes: 5 * 1 * mbitps, Streams: 1, Peak: 1.5 * mbitps, Declared: 100 * mbitps}, true},
		{"near the declared rate", sample{Secs: 5, Bytes: 5 * 80 * mbitps, Streams: 1, Peak: 90 * mbitps, Declared: 100 * mbitps}, false},
		{"10 % loss, still fast", sample{Secs: 5, Bytes: 5 * 14 * mbitps, Streams: 1, Peak: 16 * mbitps, RTT: 3 * time.Millisecond, MinRTT: time.Millisecond, LossPct: 10}, false},
		{"RTT inflated under load", sample{Secs: 5, Bytes: 5 * 5 * mbitps, Streams: 1, Peak: 8 * mbitps, RTT: 250 * time.Millisecond, MinRTT: 20 * time.Millisecond}, true},
		{"RTT inflated, idle", sample{Secs: 5, RTT: 250 * time.Millisecond, MinRTT: 20 * time.Millisecond}, false},
		{"new connections slow", sample{Secs: 5, Dials: 100, DialMedian: 47 * time.Millisecond, DialMin: 2 * time.Millisecond}, true},
		{"new connections as usual", sample{Secs: 5, Dials: 100, DialMedian: 5 * time.Millisecond, DialMin: 2 * time.Millisecond}, false},
		{"a few slow dials", sample{Secs: 5, Dials: 3, DialMedian: 300 * time.Millisecond, DialMin: 2 * time.Millisecond}, false},
		{"far server, usual dials", sample{Secs: 5, Dials: 20, DialMedian: 180 * time.Millisecond, DialMin: 150 * time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := judge(tc.s)
			if got != tc.suspect {
				t.Errorf("judge(%+v) = %v (%q), want %v", tc.s, got, why, tc.suspect)
			}
			if got && why == "" {
				t.Errorf("a suspect without a reason")
			}
		})
	}
}

func TestDecide(t *testing.T) {
	fail := errors.New("probe failed")
	for _, tc := range []struct {
		name      string
		cur, next speed
		before    float64
		move      bool
	}{
		{"throttled primary, fast fallback", speed{Rate: 0.9 * mbitps}, speed{Rate: 180 * mbitps}, 16 * mbitps, true},
		{"primary still faster", speed{Rate: 11 * mbitps}, speed{Rate: 2.5 * mbitps}, 16 * mbitps, false},
		{"lossy primary, far faster fallback, primary serves its apps", speed{Rate: 35 * mbitps}, speed{Rate: 5000 * mbitps}, 16 * mbitps, false},
		{"moderately policed primary serving half its best", speed{Rate: 9 * mbitps}, speed{Rate: 180 * mbitps}, 16 * mbitps, false},
		{"fallback faster, not by the margin", speed{Rate: 4 * mbitps}, speed{Rate: 10 * mbitps}, 16 * mbitps, false},
		{"exactly the margin", speed{Rate: 4 * mbitps}, speed{Rate: 12 * mbitps}, 16 * mbitps, true},
		{"no earlier best known: margin alone", speed{Rate: 10 * mbitps}, speed{Rate: 30 * mbitps}, 0, true},
		{"primary's probe got a few bytes, then nothing", speed{Bytes: 9000, Err: fail}, speed{Rate: 5 * mbitps}, 16 * mbitps, true},
		{"primary's probe got no answer in time", speed{Err: fail}, speed{Rate: 3000 * mbitps}, 16 * mbitps, false},
		{"fallback's probe failed", speed{Rate: 0.1 * mbitps}, speed{Err: fail}, 16 * mbitps, false},
		{"both failed", speed{Err: fail}, speed{Err: fail}, 16 * mbitps, false},
	} {
		if got := decide(tc.cur, tc.next, tc.before, 3); got != tc.move {
			t.Errorf("%s: decide = %v, want %v", tc.name, got, tc.move)
		}
	}
}

func TestRecovered(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  speed
		mark throttleMark
		back bool
	}{
		{"still throttled", speed{Rate: 1 * mbitps}, throttleMark{0.9 * mbitps, 180 * mbitps, 16 * mbitps}, false},
		{"faster, still far below its own best and the taker", speed{Rate: 5 * mbitps}, throttleMark{0.9 * mbitps, 180 * mbitps, 16 * mbitps}, false},
		{"delivers again", speed{Rate: 150 * mbitps}, throttleMark{0.9 * mbitps, 180 * mbitps, 16 * mbitps}, true},
		{"back to its own best, the taker measured far faster", speed{Rate: 300 * mbitps}, throttleMark{0.4 * mbitps, 7000 * mbitps, 16 * mbitps}, true},
		{"slower than the taker by nature, delivering", speed{Rate: 70 * mbitps}, throttleMark{1 * mbitps, 180 * mbitps, 90 * mbitps}, true},
		{"probe failed", speed{Err: errors.New("x")}, throttleMark{0.9 * mbitps, 180 * mbitps, 16 * mbitps}, false},
	} {
		if got := recovered(tc.now, tc.mark, 3); got != tc.back {
			t.Errorf("%s: recovered = %v, want %v", tc.name, got, tc.back)
		}
	}
}

// cwfwConn has CloseWrite and the relay's FrameWriter.
type cwfwConn struct{ net.Conn }

func (cwfwConn) CloseWrite() error                { return nil }
func (cwfwConn) FrontHeadroom() int               { return 4 }
func (cwfwConn) WriteFrame(b []byte) (int, error) { return len(b) - 4, nil }

type cwConn struct{ net.Conn }

func (cwConn) CloseWrite() error { return nil }

func TestMeterWrapKeepsMethods(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	m := newMeter()
	for _, tc := range []struct {
		c      net.Conn
		cw, fw bool
	}{{a, false, false}, {cwConn{a}, true, false}, {cwfwConn{a}, true, true}} {
		w := m.wrap(tc.c)
		_, cw := w.(interface{ CloseWrite() error })
		_, fw := w.(interface{ WriteFrame([]byte) (int, error) })
		if cw != tc.cw || fw != tc.fw {
			t.Errorf("wrap(%T): CloseWrite %v FrameWriter %v, want %v %v", tc.c, cw, fw, tc.cw, tc.fw)
		}
		if fw {
			n, _ := w.(interface{ WriteFrame([]byte) (int, error) }).WriteFrame(make([]byte, 14))
			if n != 10 || m.tx.Load() != 10 {
				t.Errorf("WriteFrame counted %d (returned %d), want 10", m.tx.Load(), n)
			}
		}
	}
	if len(m.flows) != 3 {
		t.Fatalf("%d flows registered, want 3", len(m.flows))
	}
	a.Close()
	for c := range m.flows {
		c.Close()
	}
	if len(m.flows) != 0 {
		t.Errorf("%d flows left after Close", len(m.flows))
	}
}

func TestMeterStarving(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	m := newMeter()
	idle := m.wrap(a).(*meteredConn)
	stalled := m.wrap(a).(*meteredConn)
	slow := m.wrap(a).(*meteredConn)
	fast := m.wrap(a).(*meteredConn)
	stalled.tx.Add(100) // sent a request, heard nothing since
	for range judgeSecs {
		slow.rx.Add(10_000)
		fast.rx.Add(10_000_000)
		m.rx.Add(10_010_000)
		m.tick()
	}
	got := map[*meteredConn]bool{}
	for _, c := range m.starving(1_000_000, judgeSecs) {
		got[c] = true
	}
	for c, want := range map[*meteredConn]bool{idle: false, stalled: true, slow: true, fast: false} {
		if got[c] != want {
			t.Errorf("starving: %p = %v, want %v", c, got[c], want)
		}
	}
	if b, streams := m.window(judgeSecs); streams != 2 || b != judgeSecs*10_010_000 {
		t.Errorf("window = %d bytes, %d streaming; want %d, 2 (slow and fast)", b, streams, judgeSecs*10_010_000)
	}
}

// rateOutbound dials loopback for real; while rate is set, what its
// streams receive is paced to rate bytes/s: a policed path.
type rateOutbound struct {
	rate atomic.Int64
}

func (o *rateOutbound) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", dst.String())
	if err != nil {
		return nil, err
	}
	return &pacedConn{Conn: c, o: o}, nil
}

func (o *rateOutbound) ListenPacket(context.Context, flow.Addr) (net.PacketConn, error) {
	return nil, errors.New("no udp")
}

func (o *rateOutbound) Close() error { return nil }

type pacedConn struct {
	net.Conn
	o *rateOutbound
}

func (c *pacedConn) Read(b []byte) (int, error) {
	r := c.o.rate.Load()
	if r == 0 {
		return c.Conn.Read(b)
	}
	n, err := c.Conn.Read(b[:min(len(b), 4096)])
	time.Sleep(time.Duration(int64(n) * int64(time.Second) / r))
	return n, err
}

// TestFailoverLeavesThrottledMember: a download through the primary
// slows to a trickle; the group compares both members by speed probes,
// moves new flows to the fallback with the figures in the event, and
// closes the starving download.
func TestFailoverLeavesThrottledMember(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/generate_204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/__down", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("bytes"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(make([]byte, n))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 16<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
			time.Sleep(4 * time.Millisecond) // about 4 MB/s
		}
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	p, f := &rateOutbound{}, &rateOutbound{}
	pol := fastPolicy(hs.URL + "/generate_204")
	pol.SpeedURL = hs.URL + "/__down?bytes=262144"
	pol.SpeedTime = time.Second
	ev := &events{}
	g, err := New("proxy", Failover, []Member{{"primary", p}, {"fallback", f}}, Options{Policy: pol, OnEvent: ev.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })

	// The download, through the primary.
	addr, _ := flow.ParseAddr(strings.TrimPrefix(hs.URL, "http://"))
	c, err := g.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, c)
		ended <- err
	}()
	time.Sleep(3 * time.Second) // the primary's best is known
	p.rate.Store(50_000)        // 0.4 Mbit/s
	deadline := time.Now().Add(12 * time.Second)
	for g.Current() == "primary" {
		if time.Now().After(deadline) {
			t.Fatalf("still on the throttled primary; events %+v", ev.list())
		}
		time.Sleep(50 * time.Millisecond)
	}
	last := ev.list()[len(ev.list())-1]
	if last.From != "primary" || last.To != "fallback" || !strings.Contains(last.Reason, "primary throttled: ") || !strings.Contains(last.Reason, "; fallback: ") {
		t.Errorf("event = %+v, want the primary left as throttled with both figures", last)
	}
	if w := last.Why; w.Kind != WhyThrottled || w.Member != "primary" || w.Next != "fallback" || w.Fault != fault.Throttled || w.Rate >= w.NextRate {
		t.Errorf("throttle's Why = %+v", w)
	}
	if !strings.Contains(last.Reason, "1 starving connections closed") {
		t.Errorf("event = %q, want the starving download closed", last.Reason)
	}
	select {
	case <-ended:
	case <-time.After(2 * time.Second):
		t.Errorf("the starving download was not closed")
	}
	if st := g.Members()[0]; !st.Throttled || st.Health == Healthy {
		t.Errorf("primary state %+v, want failing and throttled", st)
	}
	// Re-measured while throttled: a probe finds it still slow.
	if _, _, err := g.remeasure(context.Background(), 0, throttleMark{50_000, 10e6, 4e6}); err == nil || !strings.Contains(err.Error(), "still throttled") {
		t.Errorf("remeasure of the throttled primary = %v, want still throttled", err)
	}
	p.rate.Store(0)
	if _, note, err := g.remeasure(context.Background(), 0, throttleMark{50_000, 10e6, 4e6}); err != nil {
		t.Errorf("remeasure of the recovered primary = %v", err)
	} else if !strings.Contains(note, "when left") {
		t.Errorf("note %q", note)
	}
}

// TestMeterWrapWaits: a counted stream waits for its next bytes as the
// member's stream does (readwait), so that a group's idle flows hold no
// relay buffer, and says at once when the stream cannot wait.
func TestMeterWrapWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := newMeter()
	c := m.wrap(a) // a TCP conn: the variant with CloseWrite
	if _, ok := c.(meteredCW); !ok {
		t.Fatalf("wrap(%T) = %T, want meteredCW", a, c)
	}
	w := readwait.Of(c)
	if w == nil {
		t.Fatalf("wrap(%T) cannot wait", a)
	}
	wt := nettest.StartWait(t, w.WaitRead)
	wt.Blocked("before any bytes")
	b.Write([]byte("x"))
	wt.Ends("a byte came")
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	// It reads what is there without waiting, counted, as the stream does.
	tr := readwait.TryOf(c)
	if tr == nil {
		t.Fatalf("wrap(%T) cannot read without waiting", a)
	}
	buf := make([]byte, 16)
	if n, err := tr.TryRead(buf); n != 0 || err != nil {
		t.Fatalf("TryRead with nothing there = %d, %v; want 0, nil", n, err)
	}
	b.Write([]byte("yz"))
	var got int
	for end := time.Now().Add(5 * time.Second); got < 2 && time.Now().Before(end); time.Sleep(time.Millisecond) {
		n, err := tr.TryRead(buf[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if string(buf[:got]) != "yz" {
		t.Fatalf("TryRead got %q, want \"yz\"", buf[:got])
	}
	if rx := c.(meteredCW).rx.Load(); rx != 3 {
		t.Fatalf("counted %d bytes received, want 3", rx)
	}
	p, q := net.Pipe()
	defer q.Close()
	if w, tr := readwait.For(m.wrap(p)); w != nil || tr != nil {
		t.Fatalf("a counted pipe offers a wait (%v) or a read without waiting (%v): a pipe has neither", w != nil, tr != nil)
	}
}
