package core

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/internal/exepages"
)

// trimMemory hands memory back to the OS after a burst of connections or of
// traffic has ended. The Go runtime keeps freed heap for reuse and returns
// it only slowly (minutes), so after 500 connections close, or go quiet
// after a transfer, the process would stay at its peak; users read that as
// a leak. A forced collection returns it at once; see trimmer for when.
// The cost is a GC of the little that is still live, once per burst.
//
// The first tick unmaps the executable's pages that only starting touched
// (see package exepages), and so does every quiet stretch of
// trimPagesEvery ticks in a row: the code and tables of what ran meanwhile (a
// collection, a latency probe's TLS handshake and HTTP request: 2.8 MiB,
// the closing of 500 flows) that a quiet run does not read again. Neither
// collects: an idle run may never need a collection.
//
// For as long as it runs it also holds the soft memory limit (softLimit),
// headroom above what the process holds at its start.
func trimMemory(ctx context.Context, st *stats.Stats, every time.Duration, lim memLimits, log *slog.Logger) {
	defer softLimit(lim)()
	// The start's pages go at once too, not only at the first tick: the
	// first flows may be a burst of traffic, whose buffers would otherwise
	// come on top of all of them. The 16-stream bench (skiff service, then
	// connect and load at once) peaked in its first two seconds at 26 MiB,
	// 16.6 of them the executable's; the transfer itself holds ~20 (8
	// anonymous, 11.5 the code it runs).
	releasePages(log)
	t := time.NewTicker(every)
	defer t.Stop()
	var tr trimmer
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		up, down := st.Totals()
		switch tr.tick(st.ConnCount(), up+down) {
		case trimAll:
			handBack(log)
		case trimPages:
			releasePages(log)
		}
	}
}

// handBack returns the heap the process no longer uses to the OS, and
// unmaps the pages of the executable it mapped since the last time: the
// code and tables of a start or of a burst of new connections, which an
// idle or steady run does not read again (see package exepages). What it
// still runs is mapped again at once.
//
// It collects twice: what the first finds unused in the sync.Pools (the
// netstack's packet chunks, buffers) only moves to their victim caches,
// which the second frees. With one collection that memory waited for the
// follow-up trim: 3.2-3.4 MiB after 500 VLESS+WS+TLS flows through the TUN.
//
// The pages go before and after the collections: a collection maps pages
// of its own (the function tables of every frame on every stack, the
// heap's type descriptors: 2-3 MiB after 500 flows through the TUN), which
// the next collection maps again if it needs them.
func handBack(log *slog.Logger) {
	releasePages(log)
	runtime.GC()
	debug.FreeOSMemory()
	releasePages(log)
}

// releasePages unmaps the executable's pages the process mapped since the
// last time (see package exepages).
func releasePages(log *slog.Logger) {
	if _, err := exepages.Release(); err != nil {
		log.Debug("memory: releasing the executable's pages", "err", err)
	}
}

// Thresholds of trimmer, per tick (2 s in the engine).
const (
	// trimBusyBytes marks a tick as busy: 8 MiB is 32 Mbps over 2 s.
	trimBusyBytes = 8 << 20
	// trimQuietBytes marks a tick as quiet after a busy one: the flows
	// are waiting, so their relay and TLS buffers have gone back (the
	// relay's at once, tlsconf's after a second) and only a collection
	// stands between that memory and the OS.
	trimQuietBytes = 256 << 10
	// trimFollowUp is how many ticks after a trim a second one runs: it
	// returns what the burst's stragglers (streams still closing, timers,
	// goroutines on their way out) freed after the first: 7 MiB of 27
	// after 500 Hysteria2 connections through the TUN, 3.2 of 11 after
	// 500 VLESS+WS+TLS.
	trimFollowUp = 1
	// trimPagesEvery is how many quiet ticks in a row (less than
	// trimQuietBytes moved in each) pass between releases of the
	// executable's pages: a quiet run reads a few of them again within
	// seconds, and a busy one would fault its hot code back in at once.
	trimPagesEvery = 5
)

// trimAction is what trimmer.tick asks for.
type trimAction int

const (
	trimNone  trimAction = iota
	trimPages            // release the executable's pages (releasePages)
	trimAll              // hand memory back (handBack)
)

// trimmer decides, tick by tick, when to hand memory back: once most of a
// burst of connections (at least 16) has closed, and once traffic goes
// quiet after a busy tick while connections stay open (500 idle keep-alive
// connections after a transfer), each followed by a second trim
// trimFollowUp ticks later. Between them, at the first tick and after
// every trimPagesEvery quiet ticks in a row, it releases the executable's pages
// alone.
type trimmer struct {
	peak    int   // most connections since the last trim
	total   int64 // bytes relayed at the last tick
	busy    bool  // a busy tick since the last trim
	again   int   // ticks until the follow-up; 0 none
	quiet   int   // quiet ticks in a row since the executable's pages were released
	started bool  // a tick has run
}

// tick takes the open connections and the bytes relayed so far and says
// what to do now.
func (t *trimmer) tick(conns int, total int64) trimAction {
	moved := total - t.total
	t.total = total
	t.peak = max(t.peak, conns)
	first := !t.started
	t.started = true
	if t.quiet++; moved >= trimQuietBytes {
		t.quiet = 0
	}
	a := t.trim(conns, moved)
	switch {
	case a == trimAll:
		t.quiet = 0
	case first || t.quiet >= trimPagesEvery:
		t.quiet = 0
		a = trimPages
	}
	return a
}

// trim is tick's decision to hand memory back.
func (t *trimmer) trim(conns int, moved int64) trimAction {
	trim := false
	switch {
	case t.peak >= 16 && conns <= t.peak/4:
		trim = true
	case t.busy && moved < trimQuietBytes:
		trim = true
	case t.again > 0:
		if t.again--; t.again == 0 {
			return trimAll
		}
	}
	if trim {
		t.peak, t.busy, t.again = conns, false, trimFollowUp
		return trimAll
	}
	if moved >= trimBusyBytes {
		t.busy = true
	}
	return trimNone
}

// The soft memory limit lies this far above what the process uses when the
// engine starts. Near it the collector runs more often instead of letting
// the heap grow to twice what is live (GOGC's default), which caps the peak
// of a burst of flows. Too near, and the collector runs without pause. A
// TUN run's flows also carry the netstack's buffers, so it gets more room.
// Measured with 500 connections each moving 1 MiB each way at once
// (tunbench and bench -conns-only, skiff service):
//   - TUN, 32 MiB: the heap sat at the limit and the collector took about
//     60 % of the CPU: VLESS+WS+TLS 18 CPU-seconds, Trojan 19 (sing-box
//     4–5), peak 90 and 83 MiB. 64 MiB: 9 and 10 CPU-seconds, peak 95
//     and 89 MiB (sing-box 238); Hysteria2 14 CPU-seconds (sing-box 17)
//     where it had taken 72.
//   - SOCKS, 32 MiB: VLESS+WS+TLS 1.9 CPU-seconds at a 55 MiB peak; 64 MiB
//     saved 0.5 CPU-seconds for 15 MiB more.
//
// The 16 streams of the throughput benchmark stay far below either and pay
// nothing. The limit is soft: past it the runtime caps the collector's
// share of the CPU rather than failing.
const (
	proxyHeadroom = 32 << 20
	tunHeadroom   = 64 << 20
)

// memLimits is how the soft memory limit follows a run's memory (see
// softLimit and limitAfterGC).
type memLimits struct {
	headroom int64 // above the memory held at the start, until a collection finds more live
	// After each collection the limit is live memory plus a margin: live
	// divided by share, held between minMargin and maxMargin.
	share                int64
	minMargin, maxMargin int64
}

// limitsFor returns the soft limit's figures for a run with or without
// the TUN.
//
// Through the TUN a burst of busy flows holds far more live memory than
// through the proxy (the netstack's send and receive chunks come on top),
// and the margin above it is what GOGC's goal then stops at: 500
// VLESS+WS+TLS flows each moving 1 MiB each way (tunbench -conns-only,
// skiff run --pprof, at the RSS peak) had 69 MiB live (52 of it heap, 11
// stacks), a soft limit of 89.5 and a heap goal of 65, below GOGC's. A
// TUN run's margin is an eighth of live, at least 8 MiB, not a quarter:
// the collector runs about twice as often while that much is live
// (5.8 % -> 13 % of the CPU at the peak, 31 -> 51 collections by then),
// and no more often while little is (16 streams, ~10 MiB live: GOGC's
// 50 % sets the heap's goal below either margin). Its cost shows at
// 2,000 such flows, where live memory stays between 64 and 256 MiB for
// most of the burst and the margin is half the proxy's share: 69
// CPU-seconds in one run, against 42.5 and 45.1 with a quarter, and no
// lower peak (379.6 MiB against 378.5 and 417.8). Keeping the eighth only
// for a small live heap is the next thing to measure.
func limitsFor(tun bool) memLimits {
	if tun {
		return memLimits{headroom: tunHeadroom, share: 8, minMargin: 8 << 20, maxMargin: tunHeadroom / 2}
	}
	return memLimits{headroom: proxyHeadroom, share: 4, minMargin: proxyHeadroom / 4, maxMargin: proxyHeadroom / 2}
}

// softLimit sets the Go runtime's soft memory limit to headroom above the
// memory the process holds now, unless the user set GOMEMLIMIT, and
// returns the function that puts the previous limit back.
//
// The limit follows the live memory up: after each collection it is at
// least a margin above what survived it (live heap, stacks, runtime
// metadata; see limitAfterGC). A limit the live memory reaches makes the collector
// run without pause, taking its maximum share of the CPU (half of it) and
// freeing nothing: 2,000 TUN connections each moving 1 MiB each way held
// about 150 MiB live against a limit of 86, the client took 104
// CPU-seconds (sing-box 23) and 1,897 of the connections timed out.
func softLimit(lim memLimits) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	base := int64(goMemory()) + lim.headroom
	prev := debug.SetMemoryLimit(base)
	var mu sync.Mutex
	stopped := false
	stop := afterEachGC(func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			debug.SetMemoryLimit(limitAfterGC(base, int64(liveMemory()), lim))
		}
	})
	return func() {
		stop()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		debug.SetMemoryLimit(prev)
	}
}

// limitAfterGC is the soft limit after a collection that left live bytes
// (heap, stacks, metadata): base, or live plus a margin (live/lim.share,
// between lim.minMargin and lim.maxMargin), whichever is more. The margin
// is what the flows may allocate before the next collection; as a share
// of what is live it keeps the collector's work per byte allocated
// bounded (GOGC=25 for a share of 4, where each collection marks what is
// live), and its floor keeps a small heap from collecting without pause.
//
// 500 connections each moving 1 MiB each way at once: with the margin
// fixed at headroom/2, the peak was live plus 16 MiB through the proxy
// (VLESS+WS+TLS: 37 MiB live, a 53 MiB limit, 62 MiB RSS with the
// executable's pages) and plus 32 MiB through the TUN (91 live, 123). Past
// about 2,000 connections (150 MiB live and more) the margin is
// headroom/2 again, as before.
func limitAfterGC(base, live int64, lim memLimits) int64 {
	margin := min(max(live/lim.share, lim.minMargin), lim.maxMargin)
	return max(base, live+margin)
}

// afterEachGC calls f (on the runtime's cleanup goroutine) after each
// garbage collection, until stop is called.
func afterEachGC(f func()) (stop func()) {
	var stopped atomic.Bool
	var arm func()
	arm = func() {
		// A sentinel found unreachable by the next collection; 32
		// bytes, so not one of the tiny allocations that share a block.
		runtime.AddCleanup(new([32]byte), func(struct{}) {
			if !stopped.Load() {
				f()
				arm()
			}
		}, struct{}{})
	}
	arm()
	return func() { stopped.Store(true) }
}

// liveMemory is what the Go runtime needs after the last collection: the
// live heap, and its memory outside the heap's objects (stacks, metadata).
func liveMemory() uint64 {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(s)
	var v [6]uint64
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		v[i] = s[i].Value.Uint64()
	}
	heap := v[2] + v[3] + v[4] + v[5] // the heap's pages, used and not
	if v[1] < heap {
		return v[0]
	}
	return v[0] + v[1] - heap
}

// goMemory is the memory the Go runtime holds from the OS: mapped and not
// returned.
func goMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
