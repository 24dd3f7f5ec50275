package group

import (
	"sync"
	"time"
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
	LastError string        // the last failure in plain words; "" when none
	LastCheck time.Time     // last dial or probe result
	Successes int           // consecutive successful probes while Recovering
}

// health tracks one member. Its methods are safe for concurrent use.
type health struct {
	mu        sync.Mutex
	state     Health
	srtt      time.Duration
	lastErr   string
	lastCheck time.Time
	failedAt  time.Time // when it last went Failing
	okSince   time.Time // first of the current run of good probes while Recovering
	successes int       // good probes in a row while Recovering
	failures  int       // failures in a row (drives probe back-off)
}

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
	h.lastCheck = now
	if h.state == Unknown {
		h.state = Healthy
	}
	if h.state == Healthy {
		h.failures = 0
	}
}

// fail records a failed dial or probe and reports whether the member went
// from usable to Failing. Only failed probes lengthen the probe back-off: a
// fault makes many live dials fail at once, and counting each would push
// the next probe, and so the return, far out.
func (h *health) fail(now time.Time, err error, probe bool) (wentDown bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wentDown = h.state.usable()
	if h.state != Failing {
		h.failedAt = now
	}
	h.state = Failing
	h.lastErr = err.Error()
	h.lastCheck = now
	h.successes = 0
	if probe {
		h.failures++
	}
	return wentDown
}

// probeOK records a good probe and reports whether the member became
// usable again: after need good probes in a row spanning at least hold.
func (h *health) probeOK(now time.Time, rtt time.Duration, need int, hold time.Duration) (cameUp bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeRTT(rtt)
	h.lastCheck = now
	switch h.state {
	case Unknown:
		h.state = Healthy
		return false
	case Healthy:
		h.failures = 0
		return false
	case Failing:
		h.state = Recovering
		h.okSince = now
		h.successes = 1
	case Recovering:
		h.successes++
	}
	if h.successes >= need && now.Sub(h.okSince) >= hold {
		h.state = Healthy
		h.failures = 0
		h.successes = 0
		h.lastErr = ""
		return true
	}
	return false
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
	return MemberState{Name: name, Health: h.state, RTT: h.srtt, LastError: h.lastErr, LastCheck: h.lastCheck, Successes: h.successes}
}

// nextProbe returns how long to wait before the next probe of this member:
// quick and backing off while it is failing or recovering, slow while it is
// healthy.
func (h *health) nextProbe(p *Policy) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
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
