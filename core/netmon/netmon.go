// Package netmon tells Skiff when the network under it changed: a new
// default route, an address that came or went, an interface up or down,
// or a resume after the machine (or the process) slept. A tunnel that
// does not hear of these dies after a Wi-Fi change or a sleep until the
// user toggles it: its QUIC connection is bound to a source address that
// is gone or to a NAT mapping that expired, and the OS may have dropped
// its routes with the interface they pointed at.
//
// The OS sources are netlink on Linux, NotifyRouteChange2,
// NotifyUnicastIpAddressChange and NotifyIpInterfaceChange on Windows and
// the route socket on macOS; resumes come from logind's PrepareForSleep
// on Linux (over D-Bus, where there is a system bus). Everywhere a clock
// watcher adds resumes: a
// tick that comes late (the process was stopped, the machine slept) or a
// wall clock that moved apart from the monotonic one (Linux's monotonic
// clock stands still in suspend).
package netmon

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Event is one (coalesced) change.
type Event struct {
	// Reasons name what changed, in the order first seen: "route",
	// "addr", "link", "resume".
	Reasons []string
	// Resume is set when the process or the machine slept: connections
	// may be dead although no route changed.
	Resume bool
}

// Has reports whether reason is among e's reasons.
func (e Event) Has(reason string) bool {
	for _, r := range e.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// Config configures a Monitor.
type Config struct {
	// Ignore is an interface whose own changes are not reported (the TUN
	// device: its routes and addresses are Skiff's own).
	Ignore string
	// Settle is how long changes are gathered into one Event (a Wi-Fi
	// change is a burst of link, address and route messages); 0: 300 ms.
	Settle time.Duration
	// Tick is the clock watcher's period; 0: 1 s. Wall and monotonic
	// clocks that part by more than ResumeAfter (0: 5 s), or a tick three
	// times that late, are a resume.
	Tick, ResumeAfter time.Duration
	Logger            *slog.Logger // nil discards
}

// Monitor watches the network and calls its callback with each Event.
type Monitor struct {
	cfg Config
	fn  func(Event)

	raw    chan string // reasons from the sources
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start starts watching and calls fn (from one goroutine, one call at a
// time) after each change. An OS source that cannot be opened is logged
// and left out; the clock watcher runs anyway. Stop ends it.
func Start(cfg Config, fn func(Event)) *Monitor {
	if cfg.Settle <= 0 {
		cfg.Settle = 300 * time.Millisecond
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.ResumeAfter <= 0 {
		cfg.ResumeAfter = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Monitor{cfg: cfg, fn: fn, raw: make(chan string, 64), cancel: cancel}
	if err := watchOS(ctx, &m.wg, cfg.Ignore, m.report); err != nil {
		cfg.Logger.Warn("netmon: cannot watch the OS for network changes; only resumes are noticed", "err", err)
	}
	if err := watchSleep(ctx, &m.wg, m.report); err != nil {
		cfg.Logger.Debug("netmon: no sleep notifications; the clock watcher notices resumes", "err", err)
	}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		watchClock(ctx, cfg.Tick, cfg.ResumeAfter, time.Now, m.report)
	}()
	go func() {
		defer m.wg.Done()
		m.loop(ctx)
	}()
	return m
}

// Stop stops the monitor and waits for its goroutines; no call of fn is
// running or will start when it returns.
func (m *Monitor) Stop() {
	m.cancel()
	m.wg.Wait()
}

// report hands a reason to the loop without ever blocking a source: a full
// channel already holds a change that will be reported.
func (m *Monitor) report(reason string) {
	select {
	case m.raw <- reason:
	default:
	}
}

// loop gathers reasons for Settle after the first (not after a resume)
// and calls fn once.
func (m *Monitor) loop(ctx context.Context) {
	for {
		var ev Event
		add := func(r string) {
			if r == "resume" {
				ev.Resume = true
			}
			if !ev.Has(r) {
				ev.Reasons = append(ev.Reasons, r)
			}
		}
		select {
		case <-ctx.Done():
			return
		case r := <-m.raw:
			add(r)
		}
		// A resume is acted on at once: the connections are likely dead,
		// and the apps' first flows after it come within milliseconds.
		// Network changes come in bursts and are gathered.
		wait := m.cfg.Settle
		if ev.Resume {
			wait = 0
		}
		settle := time.NewTimer(wait)
	gather:
		for {
			select {
			case <-ctx.Done():
				settle.Stop()
				return
			case r := <-m.raw:
				add(r)
			case <-settle.C:
				break gather
			}
		}
		m.cfg.Logger.Info("netmon: network changed", "reasons", ev.Reasons)
		m.fn(ev)
	}
}

// watchClock reports "resume" when a tick comes late after the one before
// (see jumped): by the monotonic clock, the process was stopped; by the
// wall clock, the machine was suspended, during which Linux's monotonic
// clock does not advance.
func watchClock(ctx context.Context, tick, resumeAfter time.Duration, now func() time.Time, report func(string)) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := now()
		if jumped(cur.Sub(last), cur.Round(0).Sub(last.Round(0)), tick, resumeAfter) {
			report("resume")
		}
		last = cur
	}
}

// jumped reports whether two successive ticks, due tick apart, came mono
// apart by the monotonic clock and wall apart by the wall clock, which
// shows a sleep or a stop: clocks that moved apart by more than
// resumeAfter-tick (the machine was suspended, or the wall clock was set),
// or ticks more than stalledFactor times resumeAfter apart (the process
// was stopped). A shorter stall by the monotonic clock alone is a starved
// process on a loaded machine: its connections are alive (QUIC's idle
// time-out is 30 s), and re-dialling them all would only add to the load.
func jumped(mono, wall, tick, resumeAfter time.Duration) bool {
	return mono > stalledFactor*resumeAfter || wall-mono > resumeAfter-tick || mono-wall > resumeAfter-tick
}

// stalledFactor: see jumped (15 s with the default ResumeAfter).
const stalledFactor = 3
