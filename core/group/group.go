// Package group puts several outbounds behind one: a failover list (the
// first healthy member carries new flows), a latency-picked urltest, or a
// user's selector. A Group is itself an outbound.Outbound, so groups nest
// and the router need not know whether its target is a server or a group.
//
// Failover is judged by live signals first (a dial that fails or is slow
// for the member's own round trips starts the next member's dial as a
// hedge), probes second (with back-off, hysteresis and flap damping), and
// a failover group also leaves a member that is throttled rather than
// dead (meter.go, judge.go, throttle.go). docs/failover.md tells how these
// fit together, with the timings.
package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/fault"
	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound"
)

// Mode says how a group picks the member for a new flow.
type Mode string

// Group modes.
const (
	// Failover uses members in the configured order: the first usable one.
	Failover Mode = "failover"
	// URLTest uses the usable member with the lowest measured latency, and
	// keeps the current one unless another is faster by more than the
	// policy's tolerance.
	URLTest Mode = "urltest"
	// Selector uses the member the user selected, and no other.
	Selector Mode = "selector"
)

// Member is one outbound of a group, with the name shown to the user.
type Member struct {
	Name     string
	Outbound outbound.Outbound
}

// Policy tunes a group's health checking. Zero fields take DefaultPolicy's
// values.
type Policy struct {
	ProbeURL      string        // URL fetched through a member to probe it; a 204 endpoint
	ProbeURLs     []string      // tried in order when ProbeURL fails (probetarget.go); nil: the defaults, empty: none
	ProbeTimeout  time.Duration // a probe slower than this failed
	Interval      time.Duration // probe period of healthy members while the group is in use
	RetryMin      time.Duration // first re-probe of a failed member; doubles per failure
	RetryMax      time.Duration // longest re-probe period of a failed member
	RecoverProbes int           // good probes in a row before a failed member takes flows again
	RecoverHold   time.Duration // and the least time those probes must span
	HedgeMin      time.Duration // least wait before trying the next member in parallel
	HedgeMax      time.Duration // most wait before trying the next member in parallel
	DialTimeout   time.Duration // a member's dial that takes longer has failed
	UDPSilence    time.Duration // a UDP session unanswered this long moves to the next member
	IdleAfter     time.Duration // no probing when no flow has started for this long
	Tolerance     time.Duration // urltest: how much faster another member must be to switch

	// Throttle detection (failover groups): see judge.go.
	SpeedURL    string        // URL serving at least SpeedBytes, fetched through members to compare their goodput; "off": no throttle detection
	SpeedBytes  int64         // most bytes one speed probe reads
	SpeedTime   time.Duration // longest one speed probe reads, after the response's header (which must come within ProbeTimeout)
	SpeedMargin float64       // how many times the next member's goodput must exceed a throttled one's to take new flows
	// KeepStarved keeps the streams that starve on a member left as
	// throttled; by default they are closed, so that their applications
	// reconnect, through the member that took over.
	KeepStarved bool
}

// DefaultPolicy returns the defaults. The failover timings are written
// here and beside the code that derives from them, nowhere else:
// hedgeDelay and dialTimeout scale a member's waits by its RTT within
// these bounds, health.go holds the flap damping (relapseHolds), and
// judge.go and throttle.go the throttle checks; docs/failover.md says how
// they fit together.
func DefaultPolicy() Policy {
	return Policy{
		ProbeURL:      "http://cp.cloudflare.com/generate_204",
		ProbeTimeout:  5 * time.Second,
		Interval:      60 * time.Second,
		RetryMin:      time.Second,
		RetryMax:      10 * time.Second,
		RecoverProbes: 3,
		RecoverHold:   10 * time.Second,
		HedgeMin:      300 * time.Millisecond,
		HedgeMax:      1500 * time.Millisecond,
		DialTimeout:   5 * time.Second,
		UDPSilence:    2 * time.Second,
		IdleAfter:     5 * time.Minute,
		Tolerance:     50 * time.Millisecond,
		SpeedURL:      "https://speed.cloudflare.com/__down?bytes=1048576",
		SpeedBytes:    1 << 20,
		SpeedTime:     2 * time.Second,
		SpeedMargin:   3,
	}
}

func (p Policy) withDefaults() Policy {
	d := DefaultPolicy()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	if p.ProbeURL == "" {
		p.ProbeURL = d.ProbeURL
	}
	if p.ProbeURLs == nil {
		p.ProbeURLs = defaultProbeURLs
	}
	if p.SpeedURL == "" {
		p.SpeedURL = d.SpeedURL
	}
	if p.SpeedBytes <= 0 {
		p.SpeedBytes = d.SpeedBytes
	}
	if p.SpeedMargin <= 1 {
		p.SpeedMargin = d.SpeedMargin
	}
	set(&p.SpeedTime, d.SpeedTime)
	if p.RecoverProbes <= 0 {
		p.RecoverProbes = d.RecoverProbes
	}
	set(&p.ProbeTimeout, d.ProbeTimeout)
	set(&p.Interval, d.Interval)
	set(&p.RetryMin, d.RetryMin)
	set(&p.RetryMax, d.RetryMax)
	set(&p.RecoverHold, d.RecoverHold)
	set(&p.HedgeMin, d.HedgeMin)
	set(&p.HedgeMax, d.HedgeMax)
	set(&p.DialTimeout, d.DialTimeout)
	set(&p.UDPSilence, d.UDPSilence)
	set(&p.IdleAfter, d.IdleAfter)
	set(&p.Tolerance, d.Tolerance)
	return p
}

// Event records that the member carrying a group's new flows changed.
type Event struct {
	Time   time.Time
	Group  string
	From   string // "" when the group had no usable member
	To     string // "" when no member is usable any more
	Reason string // in English, whole (logs, CLI): "Hysteria2 failed: dial timeout", "Hysteria2 recovered: 3 good probes over 12s"
	Why    Why    // the same as data, for front ends that say it in their own words
}

// WhyKind is what made a group switch. Its values cross the API and name
// translation keys (switch.failed, …): do not rename them.
type WhyKind string

// Kinds of switch.
const (
	WhyFailed    WhyKind = "failed"    // Member failed a dial or a probe (Fault says how)
	WhyRecovered WhyKind = "recovered" // Member passed Probes good probes over Over
	WhyLatency   WhyKind = "latency"   // Member measured RTT (url-test picks the fastest)
	WhySelected  WhyKind = "selected"  // the user chose Member
	WhyThrottled WhyKind = "throttled" // Member delivered Rate, Next delivered NextRate
)

// Why is a switch's reason as data. The decision of what the reason is is
// the group's; a front end only puts it into words.
type Why struct {
	Kind     WhyKind
	Member   string        // the member the reason is about
	Fault    fault.Kind    `json:",omitempty"` // WhyFailed
	RTT      time.Duration `json:",omitempty"` // WhyLatency
	Probes   int           `json:",omitempty"` // WhyRecovered
	Over     time.Duration `json:",omitempty"` // WhyRecovered
	Rate     float64       `json:",omitempty"` // WhyThrottled: the member's speed, bytes/s
	Next     string        `json:",omitempty"` // WhyThrottled: the member that was faster
	NextRate float64       `json:",omitempty"` // WhyThrottled: its speed, bytes/s
}

// Options configures a Group beyond its members.
type Options struct {
	Policy Policy
	// OnEvent, if set, is called for every switch, synchronously: it must
	// not block.
	OnEvent func(Event)
	// Log, if set, receives a line for every throttle check (a member that
	// looked throttled, measured against the next), also those that moved
	// nothing.
	Log *slog.Logger
	// Shared: the members' outbounds are also used elsewhere (by another
	// group, or on their own as a rule's target), so Close leaves them
	// open for their owner to close.
	Shared bool
}

// Group is an outbound.Outbound over members. Its methods are safe for
// concurrent use.
type Group struct {
	name    string
	mode    Mode
	members []Member
	health  []*health
	meters  []*meter
	policy  Policy
	onEvent func(Event)
	log     *slog.Logger
	shared  bool // Close leaves the members open

	// emitMu orders switch events as the switches happen: it is held from
	// working out a switch to reporting it, so two members failing at once
	// cannot report in the opposite order.
	emitMu sync.Mutex

	mu         sync.Mutex
	current    int // index of the member new flows go to; -1: none usable
	selected   int // selector's choice
	lastActive time.Time
	probing    bool          // a prober goroutine is running
	watching   bool          // a watcher goroutine is running
	probeNow   chan probeReq // members to probe soon
	done       chan struct{} // closed by Close
	closed     bool
	wg         sync.WaitGroup
}

// New returns a group of members (at least one) in the given mode.
func New(name string, mode Mode, members []Member, opts Options) (*Group, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("group %s: no members", name)
	}
	switch mode {
	case Failover, URLTest, Selector:
	default:
		return nil, fmt.Errorf("group %s: unknown mode %q", name, mode)
	}
	g := &Group{
		name:     name,
		mode:     mode,
		members:  members,
		policy:   opts.Policy.withDefaults(),
		onEvent:  opts.OnEvent,
		log:      opts.Log,
		shared:   opts.Shared,
		probeNow: make(chan probeReq, len(members)),
		done:     make(chan struct{}),
	}
	g.health = make([]*health, len(members))
	g.meters = make([]*meter, len(members))
	for i := range g.health {
		g.health[i] = &health{}
		g.meters[i] = newMeter()
	}
	return g, nil
}

// Name returns the group's name.
func (g *Group) Name() string { return g.name }

// Mode returns the group's mode.
func (g *Group) Mode() Mode { return g.mode }

// Members returns a snapshot of every member's state, in configured order.
func (g *Group) Members() []MemberState {
	s := make([]MemberState, len(g.members))
	for i, m := range g.members {
		s[i] = g.health[i].snapshot(m.Name)
	}
	return s
}

// Current returns the name of the member new flows go to now, or "" when
// none is usable (then every member is tried in order).
func (g *Group) Current() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := g.pickLocked(); i >= 0 {
		return g.members[i].Name
	}
	return ""
}

// Select makes a selector group use the member called name. It is an
// error for other modes or an unknown name.
func (g *Group) Select(name string) error {
	if g.mode != Selector {
		return fmt.Errorf("group %s: select: not a selector group", g.name)
	}
	for i, m := range g.members {
		if m.Name == name {
			g.emitMu.Lock()
			defer g.emitMu.Unlock()
			g.mu.Lock()
			prev := g.members[g.selected].Name
			g.selected = i
			g.mu.Unlock()
			if prev != name {
				g.emit(prev, name, "selected by the user", Why{Kind: WhySelected, Member: name})
			}
			return nil
		}
	}
	return fmt.Errorf("group %s: select: no member %q", g.name, name)
}

// Close stops probing and closes every member (unless Options.Shared).
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.done)
	g.mu.Unlock()
	g.wg.Wait()
	if g.shared {
		return nil
	}
	var errs []error
	for _, m := range g.members {
		if err := m.Outbound.Close(); err != nil {
			errs = append(errs, fmt.Errorf("group %s: close %s: %w", g.name, m.Name, err))
		}
	}
	return errors.Join(errs...)
}

// pickLocked returns the member new flows go to, or -1. g.mu is held.
func (g *Group) pickLocked() int {
	switch g.mode {
	case Selector:
		return g.selected
	case URLTest:
		best := -1
		var bestRTT time.Duration
		for i, h := range g.health {
			if !h.get().usable() {
				continue
			}
			r := h.rtt()
			if r == 0 {
				r = time.Hour // unmeasured members rank last
			}
			if best < 0 || r < bestRTT {
				best, bestRTT = i, r
			}
		}
		// Stay on the current member unless the best is clearly faster.
		if c := g.current; c >= 0 && c < len(g.health) && best >= 0 && c != best && g.health[c].get().usable() {
			cr := g.health[c].rtt()
			if cr != 0 && cr-bestRTT <= g.policy.Tolerance {
				return c
			}
		}
		return best
	default:
		for i, h := range g.health {
			if h.get().usable() {
				return i
			}
		}
		return -1
	}
}

// order returns the members to try for a new flow, best first: the picked
// member, then (except for selectors) the other usable ones in configured
// order, then the failing ones as a last resort. A suspect member goes
// after the usable ones that are not.
func (g *Group) order() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	first := g.pickLocked()
	if g.mode == Selector {
		return []int{first}
	}
	// Usable members first, the suspect ones among them last (see
	// health.suspect); then the failing ones as a last resort.
	rank := func(i int) int {
		switch h := g.health[i]; {
		case !h.get().usable():
			return 2
		case h.suspected():
			return 1
		}
		return 0
	}
	order := make([]int, 0, len(g.members))
	for r := 0; r < 3; r++ {
		if first >= 0 && rank(first) == r {
			order = append(order, first)
		}
		for i := range g.health {
			if i != first && rank(i) == r {
				order = append(order, i)
			}
		}
	}
	return order
}

// avoided reports whether new flows avoid member i: it is failing or
// suspect.
func (g *Group) avoided(i int) bool {
	h := g.health[i]
	return !h.get().usable() || h.suspected()
}

// hedgeDelay is how long to wait for member i's dial before starting the
// next member's in parallel: a few of its round trips, bounded.
func (g *Group) hedgeDelay(i int) time.Duration {
	p := &g.policy
	rtt := g.health[i].rtt()
	if rtt == 0 {
		return p.HedgeMax
	}
	return min(max(4*rtt+100*time.Millisecond, p.HedgeMin), p.HedgeMax)
}

// dialTimeout is how long member i's dial may take before it has failed:
// eight of its round trips and a second, but at least half the policy's
// DialTimeout (a lossy link needs a retransmission or two, and losing the
// primary over one slow dial is worse than a late switch: the hedge serves
// the flow meanwhile), and at most DialTimeout.
func (g *Group) dialTimeout(i int) time.Duration {
	rtt := g.health[i].rtt()
	if rtt == 0 {
		return g.policy.DialTimeout
	}
	return min(max(8*rtt+time.Second, g.policy.DialTimeout/2), g.policy.DialTimeout)
}

// touch records activity and makes sure the prober runs.
func (g *Group) touch() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastActive = time.Now()
	if g.closed {
		return
	}
	if !g.probing {
		g.probing = true
		g.wg.Add(1)
		go g.probeLoop()
	}
	if !g.watching && g.mode == Failover && g.policy.SpeedURL != "off" {
		g.watching = true
		g.wg.Add(1)
		go g.watchLoop()
	}
}

// refresh recomputes the current member after a health change and emits an
// event when it moved.
func (g *Group) refresh(reason string, why Why) {
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	g.refreshLocked(reason, why)
}

// change runs f, a change of a member's health that reports whether it
// calls for a new pick, and then picks, as one step: a switch is reported
// with the reason of the change that made it, not with that of another
// member's change made in between (a fallback's first good probe taking
// the credit for the primary's refusal).
func (g *Group) change(f func() (repick bool, reason string, why Why)) {
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	if repick, reason, why := f(); repick {
		g.refreshLocked(reason, why)
	}
}

// refreshLocked is refresh with emitMu held.
func (g *Group) refreshLocked(reason string, why Why) {
	g.mu.Lock()
	prev := g.current
	next := g.pickLocked()
	g.current = next
	g.mu.Unlock()
	if prev != next {
		g.emit(g.nameOf(prev), g.nameOf(next), reason, why)
	}
}

func (g *Group) nameOf(i int) string {
	if i < 0 || i >= len(g.members) {
		return ""
	}
	return g.members[i].Name
}

func (g *Group) emit(from, to, reason string, why Why) {
	if g.onEvent != nil {
		g.onEvent(Event{Time: time.Now(), Group: g.name, From: from, To: to, Reason: reason, Why: why})
	}
}

// noAnswer is a live dial that ran out of its time: a time-out (it
// unwraps to context.DeadlineExceeded) whose text says how long it had.
type noAnswer struct {
	what  string
	limit time.Duration
}

func (e noAnswer) Error() string { return fmt.Sprintf("%s: no answer within %v", e.what, e.limit) }
func (e noAnswer) Unwrap() error { return context.DeadlineExceeded }

// failed records a failure of member i seen by a live flow or (probe) by
// the prober. A member that live flows find down is probed at once, so
// that its back-off, and so its return, starts from the fault and not from
// its next slow health check.
func (g *Group) failed(i int, err error, probe bool) {
	g.wentDown(i, err, probe, func() bool { return g.health[i].fail(time.Now(), err, probe, g.policy.RecoverHold) })
}

// timedOut records that a live dial of member i, started at started, got
// no answer in time. Unlike other failures, that marks the member failing
// only when it has gone silent (see health.timedOut).
func (g *Group) timedOut(i int, started time.Time, err error) {
	g.wentDown(i, err, false, func() bool { return g.health[i].timedOut(time.Now(), started, err, g.policy.RecoverHold) })
}

// wentDown records member i's failure err (record reports whether it made
// the member unusable: down) and, if it did, moves new flows off it.
func (g *Group) wentDown(i int, err error, probe bool, record func() (down bool)) {
	var down bool
	g.change(func() (bool, string, Why) {
		down = record()
		return down, fmt.Sprintf("%s failed: %v", g.members[i].Name, err), Why{Kind: WhyFailed, Member: g.members[i].Name, Fault: fault.Of(err)}
	})
	if down && !probe {
		g.requestProbe(i)
	}
}

// pickKey is the context key of WithPick's callback.
type pickKey struct{}

// WithPick returns a context under which a group that carries a dial or a
// UDP session reports the member it used to pick. With nested groups the
// innermost reports first; pick sees every level, outermost last, so a
// caller wanting the server keeps the first name.
func WithPick(ctx context.Context, pick func(member string)) context.Context {
	return context.WithValue(ctx, pickKey{}, pick)
}

// ReportPick tells the flow's WithPick func that member carried it: for
// an outbound that stands for a group without being one (the core's
// switchable route over one server).
func ReportPick(ctx context.Context, member string) { reportPick(ctx, member) }

func reportPick(ctx context.Context, member string) {
	if pick, ok := ctx.Value(pickKey{}).(func(string)); ok {
		pick(member)
	}
}

// attempt is one member's dial result.
type attempt[T any] struct {
	i   int
	v   T
	err error
}

// hedge runs dial on the members in order, starting the next one when the
// previous has failed or has not finished within its hedge delay, and
// returns the first success. Dials still running when one succeeds finish
// in the background, and whatever they return is closed.
func hedge[T interface{ Close() error }](ctx context.Context, g *Group, what string, dial func(ctx context.Context, m outbound.Outbound) (T, error)) (T, int, error) {
	var zero T
	g.touch()
	order := g.order()
	if len(order) == 0 {
		return zero, -1, fmt.Errorf("group %s: no member to use", g.name)
	}
	// Dials outlive the caller's interest once one of them has won (see
	// below), so they run under a context of their own that follows the
	// caller's only until then.
	dialCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	stopFollowing := context.AfterFunc(ctx, abort)
	results := make(chan attempt[T], len(order))
	started, pending := 0, 0
	startedAt := make([]time.Time, len(order))
	start := func() {
		i := order[started]
		t0 := time.Now()
		startedAt[started] = t0
		started++
		pending++
		go func() {
			// A dial that lost the race is not cancelled but left to finish
			// within its own time-out: its outcome is the live signal that
			// marks a silent member failing, so that later flows skip it
			// instead of each waiting out a hedge delay.
			limit := g.dialTimeout(i)
			dctx, dcancel := context.WithTimeout(dialCtx, limit)
			v, err := dialCaught(dctx, dial, g.members[i].Outbound)
			timedOut := errors.Is(dctx.Err(), context.DeadlineExceeded)
			dcancel()
			switch {
			case err == nil:
				d := time.Since(t0)
				g.health[i].dialOK(time.Now(), d)
				g.meters[i].dialed(time.Now(), d)
			case dialCtx.Err() != nil:
				// The caller gave up: that says nothing about the member.
			case errors.Is(err, outbound.ErrTargetRefused):
				// The server answered: the destination failed, not the
				// member (the next member may still reach it).
				g.health[i].refused(time.Now())
			case timedOut:
				err = noAnswer{what, limit}
				g.timedOut(i, t0, err)
			default:
				g.failed(i, err, false)
			}
			results <- attempt[T]{i: i, v: v, err: err}
		}()
	}
	start()
	timer := time.NewTimer(g.hedgeDelay(order[0]))
	defer timer.Stop()
	var errs []error
	for pending > 0 {
		select {
		case r := <-results:
			pending--
			if r.err == nil {
				stopFollowing()
				go closeLosers(results, pending, abort)
				reportPick(ctx, g.members[r.i].Name)
				return r.v, r.i, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", g.members[r.i].Name, r.err))
			if started < len(order) {
				start()
				timer.Reset(g.hedgeDelay(order[started-1]))
			}
		case <-timer.C:
			// The last dial started is overdue: its member is suspect
			// until it answers (see health.suspect).
			g.health[order[started-1]].overdue(startedAt[started-1])
			if started < len(order) {
				start()
				timer.Reset(g.hedgeDelay(order[started-1]))
			}
		}
	}
	stopFollowing()
	abort()
	if err := ctx.Err(); err != nil {
		return zero, -1, fmt.Errorf("group %s: %s: %w", g.name, what, err)
	}
	return zero, -1, fmt.Errorf("group %s: %s: every member failed: %w", g.name, what, errors.Join(errs...))
}

// dialCaught is dial with a panic in the member's code turned into a
// failed dial of that member (see package guard): the hedge moves on to the
// next one, as for any other failure.
func dialCaught[T any](ctx context.Context, dial func(context.Context, outbound.Outbound) (T, error), m outbound.Outbound) (v T, err error) {
	defer guard.Catch(ctx, &err, "failover dial")
	return dial(ctx, m)
}

// closeLosers waits for the dials still running after another won and
// closes what they return. Each dial has its own time-out, so it ends.
func closeLosers[T interface{ Close() error }](results <-chan attempt[T], pending int, done context.CancelFunc) {
	defer done()
	for ; pending > 0; pending-- {
		if r := <-results; r.err == nil {
			r.v.Close()
		}
	}
}

// DialContext opens a stream to dst through the best member, falling over
// to the next ones as described in the package comment.
func (g *Group) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	c, i, err := hedge(ctx, g, "dial "+dst.String(), func(ctx context.Context, m outbound.Outbound) (net.Conn, error) {
		return m.DialContext(ctx, network, dst)
	})
	if err != nil {
		return nil, err
	}
	return g.meters[i].wrap(c), nil
}

// ListenPacket opens a UDP session through the best member. The session
// moves to the next member when the current one stops answering.
func (g *Group) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	pc, i, err := hedge(ctx, g, "udp session to "+dst.String(), func(ctx context.Context, m outbound.Outbound) (net.PacketConn, error) {
		return m.ListenPacket(ctx, dst)
	})
	if err != nil {
		return nil, err
	}
	return newPacketConn(g, dst, pc, i), nil
}
