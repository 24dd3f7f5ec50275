package core

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/skiffvpn/skiff/core/stats"
)

// trimMemory hands memory back to the OS after a burst of connections or of
// traffic has ended. The Go runtime keeps freed heap for reuse and returns
// it only slowly (minutes), so after 500 connections close, or go quiet
// after a transfer, the process would stay at its peak; users read that as
// a leak. A forced collection returns it at once; see trimmer for when.
// The cost is a GC of the little that is still live, once per burst.
//
// For as long as it runs it also holds the soft memory limit (softLimit).
func trimMemory(ctx context.Context, st *stats.Stats, every time.Duration) {
	defer softLimit()()
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
		if tr.tick(st.ConnCount(), up+down) {
			debug.FreeOSMemory()
		}
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
	// after 500 Hysteria2 connections through the TUN.
	trimFollowUp = 3
)

// trimmer decides, tick by tick, when to hand memory back: once most of a
// burst of connections (at least 16) has closed, and once traffic goes
// quiet after a busy tick while connections stay open (500 idle keep-alive
// connections after a transfer), each followed by a second trim
// trimFollowUp ticks later.
type trimmer struct {
	peak  int   // most connections since the last trim
	total int64 // bytes relayed at the last tick
	busy  bool  // a busy tick since the last trim
	again int   // ticks until the follow-up; 0 none
}

// tick takes the open connections and the bytes relayed so far and says
// whether to trim now.
func (t *trimmer) tick(conns int, total int64) bool {
	moved := total - t.total
	t.total = total
	t.peak = max(t.peak, conns)
	trim := false
	switch {
	case t.peak >= 16 && conns <= t.peak/4:
		trim = true
	case t.busy && moved < trimQuietBytes:
		trim = true
	case t.again > 0:
		if t.again--; t.again == 0 {
			return true
		}
	}
	if trim {
		t.peak, t.busy, t.again = conns, false, trimFollowUp
		return true
	}
	if moved >= trimBusyBytes {
		t.busy = true
	}
	return false
}

// memoryHeadroom is how far above what the process uses when the engine
// starts the soft memory limit lies. Near it the collector runs more often
// instead of letting the heap grow to twice what is live (GOGC's default),
// which caps the peak of a burst of flows. Too near, and the collector runs
// without pause: with 500 connections through the TUN each moving 1 MiB
// each way at once, a 32 MiB headroom kept the heap at the limit and spent
// about 60 % of the CPU in the collector (VLESS+WS+TLS 21–26 CPU-seconds,
// sing-box 4–5; Hysteria2 72, sing-box 17). With 64 MiB the same bursts
// took 9 and 14 CPU-seconds at a peak of 89–92 MiB RSS instead of 75–87
// (sing-box 238 and 857); with no limit, 5 CPU-seconds and 139 MiB. The
// 16 streams of the throughput benchmark stay far below it and pay
// nothing. It is soft: past it the runtime caps the collector's share of
// the CPU rather than failing.
const memoryHeadroom = 64 << 20

// softLimit sets the Go runtime's soft memory limit to memoryHeadroom above
// the memory the process holds now, unless the user set GOMEMLIMIT, and
// returns the function that puts the previous limit back.
func softLimit() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(memoryLimit(goMemory()))
	return func() { debug.SetMemoryLimit(prev) }
}

// memoryLimit is the soft limit for a process holding base bytes.
func memoryLimit(base uint64) int64 { return int64(base) + memoryHeadroom }

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
