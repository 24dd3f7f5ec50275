// Package procs sizes the Go scheduler to the traffic. A VPN core spends
// its time handing packets from goroutine to goroutine: a QUIC socket
// reader to the connection's loop to a stream reader to a relay, a TUN
// reader to the TCP stack to a relay. With several Ps, each hand-off may
// wake another thread, which spins looking for work and goes back to
// sleep; measured on Hysteria2 through the TUN, that churn cost more CPU
// per byte than the protocol work it moved. With one P the goroutine that
// is readied runs next on the same thread. So the core runs on one P while
// one is enough, and on as many as the runtime would pick when the one P
// becomes the bottleneck: when goroutines wait to run, or the process uses
// about a whole core.
package procs

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"time"
)

// Policy is when Govern adds or removes Ps. The zero value is not useful;
// DefaultPolicy returns the one skiff uses.
type Policy struct {
	Every time.Duration // how often the load is sampled

	// Up: with one P, the Ps go up to the runtime's own choice after
	// UpAfter samples in a row in which the process used at least UpCPU
	// cores. A process on one P uses a whole core only when the P is
	// always busy: then goroutines queue for it and the traffic waits.
	UpCPU   float64
	UpAfter int

	// Down: with more than one P, back to one after DownAfter samples in
	// a row under DownCPU cores.
	DownCPU   float64
	DownAfter int
}

// DefaultPolicy returns the policy of skiff's runs: one-second samples; up
// after 3 s of a saturated P, down after 10 s of light load, so that a
// burst does not flip the setting back and forth.
//
// The wait of runnable goroutines for a P (the runtime's
// /sched/latencies) was tried as a second signal and dropped: on a busy
// machine it measures the OS's scheduling of the process as much as the
// P's load (a quarter of the goroutines waited 1 ms or more with two Ps
// and one core's use, in the TUN benchmark).
func DefaultPolicy() Policy {
	return Policy{
		Every:     time.Second,
		UpCPU:     0.95,
		UpAfter:   3,
		DownCPU:   0.5,
		DownAfter: 10,
	}
}

// Govern runs the policy until ctx is done, then hands the setting back to
// the runtime (which follows the CPUs and CPU limits again). It does
// nothing when the user set GOMAXPROCS (their choice stands), when the
// runtime has one P anyway, or when the process's CPU time cannot be read.
func Govern(ctx context.Context, p Policy, log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	full := runtime.GOMAXPROCS(0)
	if full <= 1 {
		return
	}
	prevCPU, err := processCPU()
	if err != nil {
		return
	}
	prevAt := time.Now()
	g := governor{p: p, full: full, procs: 1, set: runtime.GOMAXPROCS, log: log}
	g.set(1)
	defer runtime.SetDefaultGOMAXPROCS()
	t := time.NewTicker(p.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		cpu, err := processCPU()
		if err != nil {
			continue
		}
		g.sample((cpu - prevCPU).Seconds() / now.Sub(prevAt).Seconds())
		prevCPU, prevAt = cpu, now
	}
}

// governor is Govern's state machine, apart from the clocks so that tests
// can drive it.
type governor struct {
	p     Policy
	full  int // the runtime's own choice
	procs int // the current setting
	run   int // samples in a row that point away from the setting
	set   func(int) int
	log   *slog.Logger
}

// sample takes one sample of the process's CPU use, in cores.
func (g *governor) sample(cores float64) {
	var away bool
	var want, after int
	if g.procs == 1 {
		away = cores >= g.p.UpCPU
		want, after = g.full, g.p.UpAfter
	} else {
		away = cores < g.p.DownCPU
		want, after = 1, g.p.DownAfter
	}
	if !away {
		g.run = 0
		return
	}
	if g.run++; g.run < after {
		return
	}
	g.run = 0
	g.set(want)
	if g.log != nil {
		g.log.Debug("procs: scheduler resized", "from", g.procs, "to", want, "cores", cores)
	}
	g.procs = want
}

// Start runs Govern on a goroutine of its own until ctx is done or stop is
// called; stop waits for it to end (and the Ps to be given back).
func Start(ctx context.Context, p Policy, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Govern(ctx, p, log)
	}()
	return func() { cancel(); <-done }
}

// Follow runs Govern while on reports true: it asks on at the start and
// after every value of changes, and starts or stops Govern to match, until
// ctx is done or changes is closed. A window with the core inside it
// follows the core's state this way, so that a disconnected window has no
// sampling timer at all.
func Follow[E any](ctx context.Context, p Policy, log *slog.Logger, changes <-chan E, on func() bool) {
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		if want := on(); want && stop == nil {
			stop = Start(ctx, p, log)
		} else if !want && stop != nil {
			stop()
			stop = nil
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
		}
	}
}
