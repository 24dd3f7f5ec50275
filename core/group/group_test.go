package group

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/fault"
	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// mode of a testOutbound.
const (
	up        = iota // dials for real on loopback
	refuse           // fails at once, like a server that resets
	silent           // never answers: dials hang until their deadline, UDP is dropped
	lossy            // every tenth dial hangs, the others go through: a lossy path
	throttled        // every third dial hangs: a path that drops most of the traffic
)

// testOutbound reaches loopback servers for real, and can be switched to
// errRefused is what a dial to a closed port returns.
var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// refuse or to go silent, the two ways a member dies.
type testOutbound struct {
	mode  atomic.Int32
	dials atomic.Int32
	delay time.Duration // added to every dial, to give members different RTTs
}

func (o *testOutbound) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	o.dials.Add(1)
	switch o.mode.Load() {
	case refuse:
		return nil, errRefused
	case silent:
		<-ctx.Done()
		return nil, ctx.Err()
	case lossy, throttled:
		if o.dials.Load()%[]int32{lossy: 10, throttled: 3}[o.mode.Load()] == 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	if o.delay > 0 {
		select {
		case <-time.After(o.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", dst.String())
}

func (o *testOutbound) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	if o.mode.Load() == refuse {
		return nil, errRefused
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &testPacketConn{PacketConn: pc, o: o}, nil
}

func (o *testOutbound) Close() error { return nil }

// testPacketConn drops what it is given while its outbound is silent.
type testPacketConn struct {
	net.PacketConn
	o *testOutbound
}

func (c *testPacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.o.mode.Load() == silent {
		return len(b), nil
	}
	a, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, err
	}
	return c.PacketConn.WriteTo(b, a.UDPAddr())
}

// servers starts a 204 probe endpoint and a TCP and UDP echo on loopback.
func servers(t *testing.T) (probeURL string, tcpEcho, udpEcho flow.Addr) {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hs.Close)

	tcp := flow.AddrFromAddrPort(nettest.TCPEcho(t))
	udp := flow.AddrFromAddrPort(nettest.UDPEcho(t))
	return hs.URL, tcp, udp
}

// fastPolicy shrinks every time so the tests take little.
func fastPolicy(probeURL string) Policy {
	return Policy{
		ProbeURL:      probeURL,
		ProbeURLs:     []string{}, // no fallbacks: nothing leaves the loopback
		ProbeTimeout:  300 * time.Millisecond,
		Interval:      time.Hour,
		RetryMin:      20 * time.Millisecond,
		RetryMax:      50 * time.Millisecond,
		RecoverProbes: 3,
		RecoverHold:   150 * time.Millisecond,
		HedgeMin:      30 * time.Millisecond,
		HedgeMax:      60 * time.Millisecond,
		DialTimeout:   400 * time.Millisecond,
		UDPSilence:    100 * time.Millisecond,
		IdleAfter:     time.Minute,
	}
}

type events struct {
	mu sync.Mutex
	ev []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.ev = append(e.ev, ev); e.mu.Unlock() }
func (e *events) list() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.ev...)
}

func newTestGroup(t *testing.T, mode Mode, probeURL string, obs ...*testOutbound) (*Group, *events) {
	t.Helper()
	var ms []Member
	for i, o := range obs {
		ms = append(ms, Member{Name: []string{"primary", "fallback", "third"}[i], Outbound: o})
	}
	ev := &events{}
	g, err := New("proxy", mode, ms, Options{Policy: fastPolicy(probeURL), OnEvent: ev.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, ev
}

func echo(t *testing.T, g *Group, dst flow.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := g.DialContext(ctx, "tcp", dst)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
		t.Fatalf("echo: %q %v", b, err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFailoverUsesPrimaryWhileHealthy(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, ev := newTestGroup(t, Failover, probe, p, f)
	for range 5 {
		echo(t, g, tcp)
	}
	if g.Current() != "primary" {
		t.Errorf("current = %q, want primary", g.Current())
	}
	if n := f.dials.Load(); n > 1 { // the fallback's own probe may dial once
		t.Errorf("fallback dialled %d times for flows while the primary was healthy", n)
	}
	for _, e := range ev.list() {
		if e.From == "primary" {
			t.Errorf("unexpected switch away from the primary: %+v", e)
		}
	}
}

func TestFailoverOnRefusal(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	p.mode.Store(refuse)
	g, ev := newTestGroup(t, Failover, probe, p, f)

	echo(t, g, tcp) // served by the fallback, no error seen
	if g.Current() != "fallback" {
		t.Fatalf("current = %q, want fallback", g.Current())
	}
	var sw *Event
	for _, e := range ev.list() {
		if e.To == "fallback" {
			sw = &e
		}
	}
	if sw == nil || !strings.Contains(sw.Reason, "primary failed") || !strings.Contains(sw.Reason, "refused") {
		t.Fatalf("want a switch event naming the primary's failure, got %+v", ev.list())
	}
	if want := (Why{Kind: WhyFailed, Member: "primary", Fault: fault.Refused}); sw.Why != want {
		t.Errorf("switch's Why = %+v, want %+v", sw.Why, want)
	}
	if m := g.Members()[0]; m.Fault != fault.Refused || !strings.Contains(m.LastError, "refused") {
		t.Errorf("primary's state = %+v, want a refused fault beside the whole error", m)
	}
	// Later flows skip the failed primary without trying it.
	before := p.dials.Load()
	for range 5 {
		echo(t, g, tcp)
	}
	if after := p.dials.Load(); after-before > 2 { // probes may dial it
		t.Errorf("primary dialled %d times for flows after it failed", after-before)
	}
	st := g.Members()
	if st[0].Health == Healthy || st[0].LastError == "" {
		t.Errorf("primary state = %+v, want failing with an error", st[0])
	}
}

func TestFailoverHedgesSilentPrimary(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	// The primary's dial runs out only after 1.5 s, 25 times the longest
	// hedge delay: a flow served before that was served by the hedge,
	// however loaded the machine is.
	pol := fastPolicy(probe)
	pol.DialTimeout = 1500 * time.Millisecond
	g, err := New("proxy", Failover, []Member{{Name: "primary", Outbound: p}, {Name: "fallback", Outbound: f}}, Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	echo(t, g, tcp) // learn the primary's RTT
	p.mode.Store(silent)

	t0 := time.Now()
	echo(t, g, tcp)
	if d := time.Since(t0); d >= pol.DialTimeout {
		t.Errorf("flow on a silent primary took %v, as long as the primary's dial: the hedge did not serve it", d)
	}
	if f.dials.Load() == 0 {
		t.Error("the fallback was never dialled")
	}
	// The silent primary's own dial runs out and marks it failing, so
	// later flows go straight to the fallback.
	waitFor(t, "primary marked failing", func() bool { return g.Current() == "fallback" })
	if o := g.order(); len(o) == 0 || g.members[o[0]].Name != "fallback" {
		t.Errorf("after the switch flows try %v first, not the fallback", o)
	}
	echo(t, g, tcp)
}

func TestFailoverRecoversWithHysteresis(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, ev := newTestGroup(t, Failover, probe, p, f)
	p.mode.Store(refuse)
	echo(t, g, tcp)
	if g.Current() != "fallback" {
		t.Fatalf("current = %q, want fallback", g.Current())
	}
	downAt := time.Now()
	p.mode.Store(up)
	waitFor(t, "return to primary", func() bool { return g.Current() == "primary" })
	if d := time.Since(downAt); d < g.policy.RecoverHold {
		t.Errorf("returned after %v, before the hold of %v", d, g.policy.RecoverHold)
	}
	last := ev.list()[len(ev.list())-1]
	if last.To != "primary" || !strings.Contains(last.Reason, "recovered") {
		t.Errorf("last event = %+v, want a recovery to primary", last)
	}
	if w := last.Why; w.Kind != WhyRecovered || w.Member != "primary" || w.Probes != g.policy.RecoverProbes || w.Over < g.policy.RecoverHold {
		t.Errorf("recovery's Why = %+v", w)
	}
	if m := g.Members()[0]; m.Fault != "" || m.LastError != "" {
		t.Errorf("recovered primary still has a fault: %+v", m)
	}
	echo(t, g, tcp)
}

func TestFailoverDoesNotFlapOnFlakyPrimary(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, ev := newTestGroup(t, Failover, probe, p, f)
	p.mode.Store(refuse)
	echo(t, g, tcp)
	// The primary comes and goes faster than the hysteresis allows: every
	// other probe fails. It must not take flows back.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			p.mode.Store(int32([]int{up, refuse}[i%2]))
		}
	}()
	time.Sleep(600 * time.Millisecond)
	close(stop)
	<-done
	for _, e := range ev.list() {
		if e.To == "primary" {
			t.Fatalf("flapped back to a flaky primary: %+v", ev.list())
		}
	}
}

func TestFailoverAllDown(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	p.mode.Store(refuse)
	f.mode.Store(silent)
	g, _ := newTestGroup(t, Failover, probe, p, f)
	t0 := time.Now()
	_, err := g.DialContext(context.Background(), "tcp", tcp)
	if err == nil {
		t.Fatal("want an error with every member down")
	}
	// Bounded by the dial timeout, not by a system timeout (seconds); the
	// margin is for a loaded machine (1.2 s seen with 2 cores busy).
	if d := time.Since(t0); d > g.policy.DialTimeout+2*time.Second {
		t.Errorf("took %v, want about DialTimeout %v", d, g.policy.DialTimeout)
	}
	for _, want := range []string{"primary", "fallback", "every member failed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// One comes back: flows work again without a restart.
	f.mode.Store(up)
	waitFor(t, "fallback recovered", func() bool { return g.Current() == "fallback" })
	echo(t, g, tcp)
}

func TestURLTestPicksFastest(t *testing.T) {
	probe, tcp, _ := servers(t)
	slow, fast := &testOutbound{delay: 40 * time.Millisecond}, &testOutbound{}
	g, _ := newTestGroup(t, URLTest, probe, slow, fast)
	g.policy.Tolerance = 10 * time.Millisecond
	echo(t, g, tcp)
	waitFor(t, "fast member chosen", func() bool { return g.Current() == "fallback" })
}

func TestSelector(t *testing.T) {
	probe, tcp, _ := servers(t)
	a, b := &testOutbound{}, &testOutbound{}
	g, ev := newTestGroup(t, Selector, probe, a, b)
	if g.Current() != "primary" {
		t.Fatalf("current = %q, want the first member", g.Current())
	}
	if err := g.Select("fallback"); err != nil {
		t.Fatal(err)
	}
	echo(t, g, tcp)
	if a.dials.Load() > 1 || b.dials.Load() == 0 {
		t.Errorf("dials: a=%d b=%d, want the selected member", a.dials.Load(), b.dials.Load())
	}
	if err := g.Select("nope"); err == nil {
		t.Error("selecting an unknown member should fail")
	}
	if len(ev.list()) == 0 || ev.list()[0].Reason != "selected by the user" || ev.list()[0].Why.Kind != WhySelected {
		t.Errorf("events = %+v", ev.list())
	}
	// A selector never moves on by itself.
	b.mode.Store(refuse)
	if _, err := g.DialContext(context.Background(), "tcp", tcp); err == nil {
		t.Error("selector fell over to a member the user did not choose")
	}
}

// TestSuspectPrimaryYieldsNewFlows: once a dial of the primary outlasts
// its hedge delay with nothing answered, new TCP flows and UDP sessions
// (whose start nothing answers) try the fallback first, with no switch;
// the primary's late answer ends that.
func TestSuspectPrimaryYieldsNewFlows(t *testing.T) {
	probe, tcp, udp := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, ev := newTestGroup(t, Failover, probe, p, f)
	echo(t, g, tcp)
	if o := g.order(); g.members[o[0]].Name != "primary" {
		t.Fatalf("order %v before the fault, want the primary first", o)
	}
	// Slower than the longest hedge delay (60 ms), within the dial
	// time-out (400 ms): the hedge serves the flow, the primary answers late.
	p.delay = 250 * time.Millisecond
	echo(t, g, tcp)
	if !g.health[0].suspected() {
		t.Fatal("primary not suspect after a dial outlasted its hedge delay")
	}
	before := p.dials.Load()
	echo(t, g, tcp)
	if n := p.dials.Load() - before; n != 0 {
		t.Errorf("a suspect primary was dialled %d times for a new flow", n)
	}
	pc, err := g.ListenPacket(context.Background(), udp)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if got := pc.(*packetConn).idx; got != 1 {
		t.Errorf("a new UDP session went to member %d, want the fallback (1)", got)
	}
	if g.Current() != "primary" {
		t.Errorf("current = %q: suspicion is no switch", g.Current())
	}
	if len(ev.list()) != 0 {
		t.Errorf("switch events on suspicion: %+v", ev.list())
	}
	waitFor(t, "the primary's late answer to clear the suspicion", func() bool { return !g.health[0].suspected() })
	if o := g.order(); g.members[o[0]].Name != "primary" {
		t.Errorf("order %v after the primary answered, want the primary first", o)
	}
}

func TestUDPSessionMovesWhenSilent(t *testing.T) {
	probe, _, udp := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, _ := newTestGroup(t, Failover, probe, p, f)
	pc, err := g.ListenPacket(context.Background(), udp)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	roundTrip := func() error {
		if _, err := pc.WriteTo([]byte("hi"), udp); err != nil {
			return err
		}
		pc.SetReadDeadline(time.Now().Add(60 * time.Millisecond))
		b := make([]byte, 16)
		n, _, err := pc.ReadFrom(b)
		if err == nil && string(b[:n]) != "hi" {
			return errors.New("wrong echo")
		}
		return err
	}
	if err := roundTrip(); err != nil {
		t.Fatalf("first round trip: %v", err)
	}
	p.mode.Store(silent)
	// The app keeps retrying; within a few UDPSilence periods the session
	// must be answered again, by the fallback.
	deadline := time.Now().Add(2 * time.Second)
	for roundTrip() != nil {
		if time.Now().After(deadline) {
			t.Fatal("UDP session never moved off the silent primary")
		}
	}
	waitFor(t, "silent primary probed and marked failing", func() bool { return g.Members()[0].Health == Failing })
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New("g", Failover, nil, Options{}); err == nil {
		t.Error("no members: want error")
	}
	if _, err := New("g", "roundrobin", []Member{{Name: "a", Outbound: &testOutbound{}}}, Options{}); err == nil {
		t.Error("unknown mode: want error")
	}
}

// TestFailoverReturnsAfterLiveFailure: a primary that was healthy (its
// next health probe an hour away) and then failed live flows is probed at
// once, so it comes back soon after it recovers, not at its next health
// check.
func TestFailoverReturnsAfterLiveFailure(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, _ := newTestGroup(t, Failover, probe, p, f)
	echo(t, g, tcp)
	waitFor(t, "first health probes", func() bool { return !g.Members()[0].LastCheck.IsZero() && g.Members()[0].Health == Healthy })
	p.mode.Store(refuse)
	echo(t, g, tcp)
	if g.Current() != "fallback" {
		t.Fatalf("current = %q, want fallback", g.Current())
	}
	p.mode.Store(up)
	waitFor(t, "return to the primary", func() bool { return g.Current() == "primary" })
}

// TestLiveFailuresDoNotInflateBackoff: many flows failing at once count as
// one failure for the probe back-off.
func TestLiveFailuresDoNotInflateBackoff(t *testing.T) {
	h := &health{}
	pol := fastPolicy("")
	for range 20 {
		h.fail(time.Now(), errors.New("refused"), false, time.Second)
	}
	if d := h.nextProbe(&pol); d != pol.RetryMin {
		t.Errorf("next probe after 20 live failures in %v, want RetryMin %v", d, pol.RetryMin)
	}
	h.fail(time.Now(), errors.New("probe"), true, time.Second)
	h.fail(time.Now(), errors.New("probe"), true, time.Second)
	if d := h.nextProbe(&pol); d != 2*pol.RetryMin {
		t.Errorf("after two failed probes: %v, want %v", d, 2*pol.RetryMin)
	}
}

// TestWithPick: the member that carried a flow is reported to the caller,
// innermost group first.
func TestWithPick(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	p.mode.Store(refuse)
	inner, _ := newTestGroup(t, Failover, probe, p, f)
	outer, err := New("outer", Failover, []Member{{Name: "inner", Outbound: inner}}, Options{Policy: fastPolicy(probe)})
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Close()
	var picks []string
	ctx := WithPick(context.Background(), func(m string) { picks = append(picks, m) })
	c, err := outer.DialContext(ctx, "tcp", tcp)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if strings.Join(picks, ",") != "fallback,inner" {
		t.Errorf("picks = %v, want [fallback inner]", picks)
	}
}

// TestFailoverStaysOnSlowPrimary: a primary that answers most dials while
// the odd one waits out its time-out (a lossy path) keeps new flows; the
// hedge serves the slow ones, so no flow fails and the group does not
// switch.
func TestFailoverStaysOnSlowPrimary(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, ev := newTestGroup(t, Failover, probe, p, f)
	echo(t, g, tcp)
	p.mode.Store(lossy)
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			echo(t, g, tcp)
		}()
		time.Sleep(15 * time.Millisecond)
	}
	// Flows go on (all answered now) while the last hanging dials run out.
	p.mode.Store(up)
	for end := time.Now().Add(g.policy.DialTimeout + 100*time.Millisecond); time.Now().Before(end); {
		echo(t, g, tcp)
		time.Sleep(15 * time.Millisecond)
	}
	wg.Wait()
	if g.Current() != "primary" {
		t.Errorf("current = %q, want primary", g.Current())
	}
	for _, e := range ev.list() {
		if e.From == "primary" {
			t.Errorf("switched away from a primary that answers most dials: %+v", e)
		}
	}
	// Silent now: the next time-out finds nothing answered since its dial
	// started, and the primary fails.
	p.mode.Store(silent)
	echo(t, g, tcp)
	waitFor(t, "silent primary marked failing", func() bool { return g.Current() == "fallback" })
}

func TestHealthTimedOut(t *testing.T) {
	t0 := time.Now()
	timeout := errors.New("no answer")
	for _, tc := range []struct {
		name     string
		state    Health
		answered time.Duration // after t0 (negative: before); 0: never
		timeouts int           // earlier time-outs among the recent dials
		wantDown bool
	}{
		{"answered since: slow", Healthy, time.Millisecond, 0, false},
		{"answered since, two earlier time-outs: slow", Healthy, time.Millisecond, 2, false},
		{"answered since, three earlier time-outs: too many", Healthy, time.Millisecond, 3, true},
		{"answered before it started: silent", Healthy, -time.Millisecond, 0, true},
		{"never answered", Unknown, 0, 0, true},
		{"already failing", Failing, time.Millisecond, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &health{state: tc.state}
			if tc.answered != 0 {
				h.answered = t0.Add(tc.answered)
			}
			for range tc.timeouts {
				h.timeouts = h.timeouts<<1 | 1
				h.timeouts <<= 1 // with a success between
			}
			if got := h.timedOut(t0.Add(time.Second), t0, timeout, time.Second); got != tc.wantDown {
				t.Errorf("went down = %v, want %v", got, tc.wantDown)
			}
			if got := h.get(); tc.wantDown && got != Failing {
				t.Errorf("state = %v, want failing", got)
			}
		})
	}
}

// TestHealthFlapDamping: a member that fails soon after it returned waits
// twice as long for its next return, up to 16 times the hold, and is
// forgiven once it has stayed up long enough.
func TestHealthFlapDamping(t *testing.T) {
	const hold = time.Second
	h := &health{}
	now := time.Now()
	err := errors.New("refused")
	// recover drives h from Failing back to Healthy with good probes one
	// hold/4 apart, and returns how long that took.
	recover := func() time.Duration {
		start := now
		for !h.probeOK(now, time.Millisecond, 3, hold) {
			now = now.Add(hold / 4)
			if now.Sub(start) > time.Hour {
				t.Fatal("never recovered")
			}
		}
		return now.Sub(start)
	}
	h.fail(now, err, false, hold)
	if d := recover(); d != hold {
		t.Fatalf("first return after %v, want %v", d, hold)
	}
	for _, want := range []time.Duration{2 * hold, 4 * hold, 8 * hold, 16 * hold, 16 * hold} {
		now = now.Add(hold) // up for a moment, then down again: a relapse
		h.fail(now, err, false, hold)
		if d := recover(); d != want {
			t.Fatalf("return after a relapse took %v, want %v", d, want)
		}
	}
	// Up for long enough (relapseHolds of the current hold): forgiven.
	now = now.Add(relapseHolds * 16 * hold)
	h.probeOK(now, time.Millisecond, 3, hold)
	now = now.Add(time.Second)
	h.fail(now, err, false, hold)
	if d := recover(); d != hold {
		t.Errorf("return after a forgiven member failed took %v, want %v", d, hold)
	}
}

// TestFailoverLeavesThrottledPrimary: a primary that still answers some
// dials but lets many of them time out (a throttled path) is left for the
// fallback all the same.
func TestFailoverLeavesThrottledPrimary(t *testing.T) {
	probe, tcp, _ := servers(t)
	p, f := &testOutbound{}, &testOutbound{}
	g, ev := newTestGroup(t, Failover, probe, p, f)
	echo(t, g, tcp)
	p.mode.Store(throttled)
	deadline := time.Now().Add(3 * time.Second)
	for g.Current() == "primary" {
		if time.Now().After(deadline) {
			t.Fatalf("still on a throttled primary; events %+v", ev.list())
		}
		echo(t, g, tcp) // served by the hedge when the primary's dial hangs
		time.Sleep(15 * time.Millisecond)
	}
	// Failed by a dial's time-out, or, on a loaded machine, by a probe that
	// the hanging dial made time out first: either way by time-outs.
	last := ev.list()[len(ev.list())-1]
	timedOut := strings.Contains(last.Reason, "no answer within") || strings.Contains(last.Reason, "deadline exceeded")
	if last.From != "primary" || !timedOut || last.Why.Fault != fault.Timeout {
		t.Errorf("last event = %+v, want the primary failed by a time-out", last)
	}
}
