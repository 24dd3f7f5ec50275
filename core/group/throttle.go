package group

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/fault"
	"github.com/skiffvpn/skiff/core/outbound"
)

// Checks of a member that looks throttled cost two speed probes; one that
// finds nothing makes the next wait twice as long, until the member has
// looked fine for checkCalm.
const (
	checkBackoffMin = 30 * time.Second
	checkBackoffMax = 10 * time.Minute
	checkCalm       = 10 * time.Minute
)

// checkResult is the outcome of comparing the member carrying new flows
// (cur) with the next one by speed probes.
type checkResult struct {
	cur, next   int
	s           sample
	why         string // why cur looked throttled
	curSp, nxSp speed
}

// watchLoop samples the members' meters once a second and, in a failover
// group, judges the member that carries new flows: when it looks throttled
// (judge), it is compared with the next usable member by speed probes
// (one check at a time, with back-off), and left when the next is clearly
// faster (decide). It ends with the group or after IdleAfter without
// flows, like the prober.
func (g *Group) watchLoop() {
	defer g.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	checks := make(chan checkResult, 1)
	checking := false
	var nextCheck, calmSince, lastCheck time.Time
	var lastLive float64 // the member's live goodput at the last check that moved nothing
	backoff := checkBackoffMin
	for {
		select {
		case <-g.done:
			return
		case r := <-checks:
			checking = false
			lastCheck = time.Now()
			if g.applyCheck(r) {
				backoff, lastLive = checkBackoffMin, 0
			} else {
				nextCheck = time.Now().Add(backoff)
				backoff = min(2*backoff, checkBackoffMax)
				lastLive = r.s.rate()
			}
			continue
		case <-tick.C:
		}
		g.mu.Lock()
		if time.Since(g.lastActive) > g.policy.IdleAfter {
			g.watching = false
			g.mu.Unlock()
			return
		}
		cur, next := g.judgedLocked()
		g.mu.Unlock()
		for _, m := range g.meters {
			m.tick()
		}
		now := time.Now()
		if checking || cur < 0 || next < 0 {
			continue
		}
		s := g.sample(cur, now)
		suspect, why := judge(s)
		switch {
		case suspect:
			calmSince = time.Time{}
		case calmSince.IsZero():
			calmSince = now
		case now.Sub(calmSince) >= checkCalm:
			backoff = checkBackoffMin // a new episode gets a prompt check
		}
		// Goodput fallen to a third of what the member delivered at the
		// last check (which found it fine) is news: it is checked without
		// waiting out the back-off, at most every checkBackoffMin, and
		// each such check needs a further fall.
		worse := s.sustained() && s.rate()*g.policy.SpeedMargin < lastLive && now.Sub(lastCheck) >= checkBackoffMin
		if !suspect || (now.Before(nextCheck) && !worse) {
			continue
		}
		checking = true
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			r := checkResult{cur: cur, next: next, s: s, why: why}
			done := make(chan speed, 1)
			go func() { done <- g.speed(ctx, next) }()
			r.curSp = g.speed(ctx, cur)
			r.nxSp = <-done
			checks <- r // buffered: never blocks, also after the loop ended
		}()
	}
}

// judgedLocked returns the member carrying new flows and the one that
// would take them over, or -1s. g.mu is held.
func (g *Group) judgedLocked() (cur, next int) {
	cur = g.pickLocked()
	if cur < 0 {
		return -1, -1
	}
	for i, h := range g.health {
		if i != cur && h.get().usable() {
			return cur, i
		}
	}
	return cur, -1
}

// sample collects member i's delivery over the judging window.
func (g *Group) sample(i int, now time.Time) sample {
	m := g.meters[i]
	s := sample{Secs: judgeSecs, Peak: m.peak}
	s.Bytes, s.Streams = m.window(judgeSecs)
	s.Dials, s.DialMedian, s.DialMin = m.dialFigures(now, now.Add(-judgeSecs*time.Second))
	if ps, ok := g.members[i].Outbound.(outbound.PathStatser); ok {
		if st, ok := ps.PathStats(); ok {
			s.RTT, s.MinRTT, s.Declared = st.RTT, st.MinRTT, float64(st.DeclaredRx)
			if st.PacketsSent > 0 {
				s.LossPct = 100 * float64(st.PacketsLost) / float64(st.PacketsSent)
			}
		}
	}
	return s
}

// speed runs one speed probe through member i.
func (g *Group) speed(ctx context.Context, i int) speed {
	p := &g.policy
	rate, n, first, err := Speed(ctx, g.members[i].Outbound, p.SpeedURL, p.SpeedBytes, p.SpeedTime, p.ProbeTimeout)
	return speed{Rate: rate, Bytes: n, First: first, Err: err}
}

// applyCheck moves new flows off r.cur when r's speed probes say the next
// member is clearly faster, closes the streams starving on r.cur (unless
// the policy keeps them), and has r.cur re-measured. It reports whether it
// moved the flows.
func (g *Group) applyCheck(r checkResult) bool {
	p := &g.policy
	move := decide(r.curSp, r.nxSp, r.s.Peak, p.SpeedMargin)
	if g.log != nil {
		errOf := func(s speed) string {
			if s.Err != nil {
				return s.Err.Error()
			}
			return ""
		}
		g.log.Info("throttle check", "group", g.name, "member", g.members[r.cur].Name, "looked", r.why,
			"speed", mbit(r.curSp.Rate), "err", errOf(r.curSp), "best_before", mbit(r.s.Peak),
			"next", g.members[r.next].Name, "next_speed", mbit(r.nxSp.Rate), "next_err", errOf(r.nxSp), "move", move)
	}
	if !move {
		return false
	}
	cur, next := g.members[r.cur].Name, g.members[r.next].Name
	var b strings.Builder
	fmt.Fprintf(&b, "%s throttled: %s", cur, mbit(r.curSp.Rate))
	if r.curSp.Err != nil {
		fmt.Fprintf(&b, " (%v)", r.curSp.Err)
	}
	if r.s.RTT > 0 {
		fmt.Fprintf(&b, ", RTT %s", rttString(r.s.RTT))
	}
	if r.s.LossPct > 0 {
		fmt.Fprintf(&b, ", loss %.0f %%", r.s.LossPct)
	}
	fmt.Fprintf(&b, " (%s); %s: %s", r.why, next, mbit(r.nxSp.Rate))
	var starving []*meteredConn
	if !p.KeepStarved {
		starving = g.meters[r.cur].starving(r.nxSp.Rate/p.SpeedMargin, judgeSecs)
		if len(starving) > 0 {
			fmt.Fprintf(&b, "; %d starving connections closed", len(starving))
		}
	}
	reason := b.String()
	mark := throttleMark{Left: r.curSp.Rate, Taker: r.nxSp.Rate, Before: r.s.Peak}
	g.change(func() (bool, string, Why) {
		return g.health[r.cur].throttle(time.Now(), errors.New(reason), p.RecoverHold, mark),
			reason, Why{Kind: WhyThrottled, Member: cur, Fault: fault.Throttled, Rate: r.curSp.Rate, Next: next, NextRate: r.nxSp.Rate}
	})
	for _, c := range starving {
		c.Close()
	}
	g.scheduleProbe(r.cur, throttleRetryMin)
	return true
}

// remeasure is the prober's probe of member i, left as throttled with
// mark: a speed probe, good when the member delivers again (recovered).
// The note says how much, for the recovery event.
func (g *Group) remeasure(ctx context.Context, i int, mark throttleMark) (time.Duration, string, error) {
	sp := g.speed(ctx, i)
	if sp.Err != nil {
		return 0, "", sp.Err
	}
	if !recovered(sp, mark, g.policy.SpeedMargin) {
		return 0, "", fmt.Errorf("still throttled: %s (%s when left, %s before; %s for the member that took over)", mbit(sp.Rate), mbit(mark.Left), mbit(mark.Before), mbit(mark.Taker))
	}
	return sp.First, fmt.Sprintf(", %s (%s when left)", mbit(sp.Rate), mbit(mark.Left)), nil
}
