package group

import (
	"math/bits"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/fault"
)

// Health is a member's state as the group judges it.
type Health int

// Member health states.
const (
	// Unknown: never used nor probed yet. Treated as usable.
	Unknown Health = iota
	// Healthy: the last dial or probe succeeded.
	Healthy
	// Failing: the last dial or probe failed; flows avoid it while another
	// member is usable, and it is probed with back-off.
	Failing
	// Recovering: failed before, and the latest probes succeed, but not yet
	// enough of them for long enough to take flows back (hysteresis).
	Recovering
)

func (h Health) String() string {
	switch h {
	case Healthy:
		return "healthy"
	case Failing:
		return "failing"
	case Recovering:
		return "recovering"
	default:
		return "unknown"
	}
}

// usable reports whether new flows may go to a member in state h.
func (h Health) usable() bool { return h == Unknown || h == Healthy }

// MemberState is a snapshot of one member for the GUI and the API.
type MemberState struct {
	Name      string
	Health    Health
	RTT       time.Duration // smoothed connect time of recent dials and probes; 0: none measured
	LastError string        // the last failure, the error's whole text (logs, CLI); "" when none
	Fault     fault.Kind    // the last failure's kind, for front ends' own words; "" when none
	LastCheck time.Time     // last dial or probe result
	Successes int           // consecutive successful probes while Recovering
	Throttled bool          // left because it delivered far less than the next member; re-measured by speed probes
}

// health tracks one member. Its methods are safe for concurrent use.
type health struct {
	mu        sync.Mutex
	state     Health
	srtt      time.Duration
	lastErr   string
	fault     fault.Kind
	lastCheck time.Time
	failedAt  time.Time // when it last went Failing
	okSince   time.Time // first of the current run of good probes while Recovering
	successes int       // good probes in a row while Recovering
	failures  int       // failures in a row (drives probe back-off)

	// Live dials that ran out of time are weighed against the member's
	// other dials: one that answers most of them is slow, not down.
	answered time.Time // when a live dial last succeeded
	timeouts uint16    // bit k set: the k-th most recent live dial timed out

	// A live dial that outlasts its hedge delay while the member answers
	// nothing else makes the member suspect: new flows try the others
	// first until it answers a dial or a probe, or the dial times out and
	// it fails. A path that died a moment ago is then not tried by every
	// flow (and every UDP session, whose start nothing answers) for the
	// seconds its dial time-out takes. Suspicion moves no flow that is
	// running and is no switch: the member stays the group's current one.
	suspect time.Time // start of the oldest overdue dial; zero when none

	// Flap damping: a member that fails again soon after it returned has
	// its next return held back longer.
	upAt     time.Time // when it last returned from Failing
	relapses int       // returns that ended in a failure soon after; 0..maxRelapses

	// Throttling: a member left because it delivered far less than the
	// next one returns only when speed probes find it delivering again.
	throttled bool
	mark      throttleMark // what was measured when it was left
}

// Re-measuring a throttled member: speed probes cost the user's traffic,
// so they come at growing intervals.
const (
	throttleRetryMin = 5 * time.Second // first re-measures; doubles every second probe that finds it throttled
	throttleRetryMax = 5 * time.Minute
)

// Timeout weighing and flap damping.
const (
	// slowTimeouts is how many of a member's last 16 live dials may time
	// out while others succeed before it counts as failing all the same.
	slowTimeouts = 4
	// maxRelapses caps the damping: the hold is at most 16 times the
	// policy's RecoverHold.
	maxRelapses = 4
	// relapseHolds is how long, in holds, a returned member must stay up
	// for its return to count as good: fail within it and the next hold
	// doubles; stay beyond it and the damping is forgiven.
	relapseHolds = 6
)

// observeRTT folds a connect time into the smoothed RTT (RFC 6298's 1/8).
func (h *health) observeRTT(d time.Duration) {
	if h.srtt == 0 {
		h.srtt = d
		return
	}
	h.srtt += (d - h.srtt) / 8
}

// dialOK records a successful live dial. A live dial counts as proof of
// health only for a member that is already usable: a recovering member is
// promoted by probes alone, so a lucky flow does not cut the hysteresis
// short.
func (h *health) dialOK(now time.Time, rtt time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeRTT(rtt)
	h.answer(now)
}

// refused records a live dial the server answered but could not open
// (outbound.ErrTargetRefused): proof of health as dialOK is, but its time
// includes the server's own try at the destination, so it is no RTT.
func (h *health) refused(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answer(now)
}

// answer records that the member answered a live dial; h.mu is held.
func (h *health) answer(now time.Time) {
	h.lastCheck = now
	h.answered = now
	h.suspect = time.Time{}
	h.timeouts <<= 1
	if h.state == Unknown {
		h.state = Healthy
	}
	if h.state == Healthy {
		h.failures = 0
	}
}

// timedOut records a live dial, started at started, that got no answer
// within its time-out, and reports whether the member went from usable to
// Failing. A usable member that has answered another dial since this one
// started is slow, not down (a lossy path makes the odd dial wait out
// retransmissions while the rest go through; the hedge serves that flow):
// it stays usable unless too many of its recent dials time out. A member
// that answered nothing since is silent, and fails.
func (h *health) timedOut(now, started time.Time, err error, hold time.Duration) (wentDown bool) {
	h.mu.Lock()
	h.timeouts = h.timeouts<<1 | 1
	slow := h.state.usable() && h.answered.After(started) && bits.OnesCount16(h.timeouts) < slowTimeouts
	h.mu.Unlock()
	if slow {
		return false
	}
	return h.fail(now, err, false, hold)
}

// fail records a failed dial or probe and reports whether the member went
// from usable to Failing. Only failed probes lengthen the probe back-off: a
// fault makes many live dials fail at once, and counting each would push
// the next probe, and so the return, far out.
//
// A member that returned less than relapseHolds holds ago and fails again
// has relapsed: its next return waits twice as long (flap damping).
func (h *health) fail(now time.Time, err error, probe bool, hold time.Duration) (wentDown bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wentDown = h.state.usable()
	if wentDown && !h.upAt.IsZero() && now.Sub(h.upAt) < relapseHolds*h.holdLocked(hold) {
		h.relapses = min(h.relapses+1, maxRelapses)
	}
	if h.state != Failing {
		h.failedAt = now
	}
	h.state = Failing
	h.lastErr = err.Error()
	h.fault = fault.Of(err)
	h.lastCheck = now
	h.successes = 0
	if probe {
		h.failures++
	}
	return wentDown
}

// holdLocked is how long a failed member's good probes must span before
// it returns: the policy's hold, doubled for each recent relapse. h.mu is
// held.
func (h *health) holdLocked(hold time.Duration) time.Duration {
	return hold << h.relapses
}

// hold is how long a failed member's good probes must span now, given the
// policy's hold: see holdLocked.
func (h *health) hold(hold time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holdLocked(hold)
}

// probeOK records a good probe and reports whether the member became
// usable again: after need good probes in a row spanning at least hold,
// doubled for each recent relapse.
func (h *health) probeOK(now time.Time, rtt time.Duration, need int, hold time.Duration) (cameUp bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeRTT(rtt)
	h.lastCheck = now
	h.suspect = time.Time{}
	switch h.state {
	case Unknown:
		h.state = Healthy
		return false
	case Healthy:
		h.failures = 0
		if h.relapses > 0 && now.Sub(h.upAt) >= relapseHolds*h.holdLocked(hold) {
			h.relapses = 0 // it has stayed up: forgiven
		}
		return false
	case Failing:
		h.state = Recovering
		h.okSince = now
		h.successes = 1
	case Recovering:
		h.successes++
	}
	if h.successes >= need && now.Sub(h.okSince) >= h.holdLocked(hold) {
		h.state = Healthy
		h.failures = 0
		h.successes = 0
		h.lastErr, h.fault = "", ""
		h.upAt = now
		h.timeouts = 0
		h.throttled = false
		return true
	}
	return false
}

// throttle records that the member was left as throttled, with what was
// measured then (m). It reports
// whether the member went from usable to Failing (see fail, whose flap
// damping applies).
func (h *health) throttle(now time.Time, err error, hold time.Duration, m throttleMark) (wentDown bool) {
	wentDown = h.fail(now, err, false, hold)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.throttled = true
	h.fault = fault.Throttled
	h.mark = m
	h.failures = 0
	return wentDown
}

// throttleInfo reports whether the member is left as throttled, and what
// was measured then.
func (h *health) throttleInfo() (throttled bool, m throttleMark) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.throttled, h.mark
}

// overdue records that a live dial started at started has outlasted its
// hedge delay: the member is suspect unless it answered a dial since.
func (h *health) overdue(started time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.answered.After(started) {
		return
	}
	if h.suspect.IsZero() || started.Before(h.suspect) {
		h.suspect = started
	}
}

// suspected reports whether the member is suspect (see health.suspect).
func (h *health) suspected() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.suspect.IsZero()
}

func (h *health) get() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

func (h *health) rtt() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srtt
}

func (h *health) snapshot(name string) MemberState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return MemberState{Name: name, Health: h.state, RTT: h.srtt, LastError: h.lastErr, Fault: h.fault, LastCheck: h.lastCheck, Successes: h.successes, Throttled: h.throttled}
}

// nextProbe returns how long to wait before the next probe of this member:
// quick and backing off while it is failing or recovering, slow while it is
// healthy.
func (h *health) nextProbe(p *Policy) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.throttled {
		switch h.state {
		case Failing:
			return min(throttleRetryMin<<min(h.failures/2, 16), throttleRetryMax)
		case Recovering:
			return throttleRetryMin
		}
	}
	switch h.state {
	case Failing:
		d := p.RetryMin << min(max(h.failures-1, 0), 16)
		return min(max(d, p.RetryMin), p.RetryMax)
	case Recovering:
		return p.RetryMin
	default:
		return p.Interval
	}
}
