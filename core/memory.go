package core

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/skiffvpn/skiff/core/stats"
)

// trimMemory hands memory back to the OS after a burst of connections has
// ended. The Go runtime keeps freed heap for reuse and returns it only
// slowly (minutes), so after 500 connections close the process would stay
// at its peak; users read that as a leak. Once most of a burst (at least
// 16 connections) has closed, one forced collection returns it at once.
// The cost is one GC of the little that is still live.
func trimMemory(ctx context.Context, st *stats.Stats, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	peak := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := st.ConnCount()
		peak = max(peak, n)
		if peak >= 16 && n <= peak/4 {
			debug.FreeOSMemory()
			peak = n
		}
	}
}
