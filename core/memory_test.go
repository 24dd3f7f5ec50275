package core

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/stats"
)

// TestSoftLimit checks that the engine's memory trimmer holds a soft limit
// above what the process uses while it runs, leaves a GOMEMLIMIT of the
// user's alone, and puts the previous limit back when it ends.
func TestSoftLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		trimMemory(ctx, stats.New(), time.Hour, limitsFor(true), slog.New(slog.DiscardHandler))
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	var got int64
	for got = debug.SetMemoryLimit(-1); got == math.MaxInt64 && time.Now().Before(deadline); got = debug.SetMemoryLimit(-1) {
		time.Sleep(time.Millisecond)
	}
	if got < tunHeadroom || got > 4*tunHeadroom {
		t.Errorf("limit while running %d, want %d above the few MiB a test process uses", got, tunHeadroom)
	}
	cancel()
	<-done
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after the trimmer ended %d, want the previous one back", got)
	}

	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(100 << 20)
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() {
		trimMemory(ctx, stats.New(), time.Hour, limitsFor(true), slog.New(slog.DiscardHandler))
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != 100<<20 {
		t.Errorf("limit with GOMEMLIMIT set %d, want the user's %d", got, 100<<20)
	}
	cancel()
	<-done
}

// TestSoftLimitFollowsLiveMemory checks that the soft limit rises above
// live memory that outgrows it, so that the collector does not run without
// pause, and comes back down once that memory is freed.
func TestSoftLimitFollowsLiveMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	restore := softLimit(limitsFor(false))
	defer restore()
	base := debug.SetMemoryLimit(-1)
	waitLimit := func(what string, ok func(int64) bool) int64 {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			runtime.GC()
			got := debug.SetMemoryLimit(-1)
			if ok(got) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: limit %d MiB (it started at %d MiB)", what, got>>20, base>>20)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	const live = 2 * proxyHeadroom
	hold := make([][]byte, live>>20)
	for i := range hold {
		hold[i] = make([]byte, 1<<20)
	}
	waitLimit("with 64 MiB live", func(l int64) bool { return l >= live+proxyHeadroom/2 })
	runtime.KeepAlive(hold)
	hold = nil
	waitLimit("after it was freed", func(l int64) bool { return l == base })
	restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after restore %d, want the previous one back", got)
	}
}

// TestLimitAfterGC checks the soft limit's policy after a collection: the
// start's limit while little is live, then live plus a margin: a quarter
// of live through the proxy, an eighth through the TUN, each between its
// floor and half the headroom.
func TestLimitAfterGC(t *testing.T) {
	const mib = 1 << 20
	proxy, tun := limitsFor(false), limitsFor(true)
	for _, c := range []struct {
		name       string
		base, live int64
		lim        memLimits
		want       int64
	}{
		{"little live: the start's limit", 40 * mib, 10 * mib, proxy, 40 * mib},
		{"proxy, 500 flows: the floor's margin", 40 * mib, 30 * mib, proxy, 40 * mib},
		{"proxy, 500 TLS flows", 40 * mib, 37 * mib, proxy, 37*mib + 37*mib/4},
		{"proxy, many more: half the headroom", 40 * mib, 200 * mib, proxy, 216 * mib},
		{"TUN, little live: the start's limit", 74 * mib, 20 * mib, tun, 74 * mib},
		{"TUN, 500 flows: an eighth of live", 74 * mib, 80 * mib, tun, 90 * mib},
		{"TUN, 500 flows: the floor's margin", 10 * mib, 60 * mib, tun, 68 * mib},
		{"TUN, 2,000 flows: an eighth of live", 74 * mib, 190 * mib, tun, 190*mib + 190*mib/8},
		{"TUN, 5,000 flows: half the headroom", 74 * mib, 400 * mib, tun, 432 * mib},
	} {
		if got := limitAfterGC(c.base, c.live, c.lim); got != c.want {
			t.Errorf("%s: limitAfterGC(%d, %d MiB, %+v) = %.2f MiB, want %.2f", c.name,
				c.base/mib, c.live/mib, c.lim, float64(got)/mib, float64(c.want)/mib)
		}
	}
}

// TestTrimmer checks when memory is handed back: after most of a burst of
// connections closed, after traffic went quiet following a busy tick, each
// with its follow-up, and not while traffic flows or stays small; and when
// the executable's pages alone are released: at the first tick and after
// trimPagesEvery quiet ticks in a row.
func TestTrimmer(t *testing.T) {
	const busy, quiet = trimBusyBytes, trimQuietBytes / 2
	const n = trimPagesEvery
	type step struct {
		conns int
		moved int64 // bytes relayed in the tick
	}
	steps := func(s step, k int) []step { return slices.Repeat([]step{s}, k) }
	tests := []struct {
		name  string
		steps []step
		trims []int // ticks (0-based) that hand memory back
		pages []int // ticks that release the executable's pages alone
	}{
		{"nothing happens", []step{{0, 0}, {2, 100}, {2, 0}, {0, 0}}, nil, []int{0}},
		{"idle run", steps(step{0, 0}, 3*n+1), nil, []int{0, n, 2 * n, 3 * n}},
		{"small burst of connections", []step{{10, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}, nil, []int{0}},
		{"burst of connections closes", []step{{500, 0}, {400, 0}, {100, 0}, {100, 0}, {100, 0}, {100, 0}, {100, 0}, {100, 0}, {100, 0}},
			[]int{2, 2 + trimFollowUp}, []int{0, 2 + trimFollowUp + n}},
		{"traffic goes quiet, connections stay", slices.Concat(steps(step{500, busy}, 2), steps(step{500, quiet}, 9)),
			[]int{2, 2 + trimFollowUp}, []int{0, 2 + trimFollowUp + n}},
		{"steady traffic", steps(step{16, busy}, 2*n), nil, []int{0}},
		{"slow traffic", slices.Concat([]step{{1, 0}}, steps(step{1, busy / 4}, 2*n), steps(step{1, quiet}, n)),
			nil, []int{0, 3 * n}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr trimmer
			var total int64
			var trims, pages []int
			for i, s := range tt.steps {
				total += s.moved
				switch tr.tick(s.conns, total) {
				case trimAll:
					trims = append(trims, i)
				case trimPages:
					pages = append(pages, i)
				}
			}
			if !slices.Equal(trims, tt.trims) || !slices.Equal(pages, tt.pages) {
				t.Fatalf("trims at ticks %v and pages released at %v, want %v and %v", trims, pages, tt.trims, tt.pages)
			}
		})
	}
}
