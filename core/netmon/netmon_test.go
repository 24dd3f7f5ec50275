package netmon

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

func TestJumped(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mono, wall time.Duration // from the last tick to this one
		want       bool
	}{
		{"on time", time.Second, time.Second, false},
		{"a little late", 3 * time.Second, 3 * time.Second, false},
		{"starved 8 s on a loaded machine", 8 * time.Second, 8 * time.Second, false},
		{"stopped 16 s", 16 * time.Second, 16 * time.Second, true},
		{"NTP slew", time.Second, 1100 * time.Millisecond, false},
		{"stopped 30 s (SIGSTOP)", 31 * time.Second, 31 * time.Second, true},
		{"suspended: wall moved, monotonic did not", time.Second, 3601 * time.Second, true},
		{"wall set back", time.Second, -time.Hour, true},
	} {
		if got := jumped(tc.mono, tc.wall, time.Second, 5*time.Second); got != tc.want {
			t.Errorf("%s: jumped = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMonitorCoalesces checks that a burst of reasons becomes one Event
// with each reason once, and that Stop waits for the callback.
func TestMonitorCoalesces(t *testing.T) {
	var mu sync.Mutex
	var got []Event
	m := &Monitor{cfg: Config{Settle: 50 * time.Millisecond}, raw: make(chan string, 64)}
	m.cfg.Logger = discard()
	m.fn = func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.loop(ctx) }()
	for _, r := range []string{"link", "addr", "route", "addr", "route", "resume"} {
		m.report(r)
	}
	time.Sleep(300 * time.Millisecond)
	m.report("route")
	time.Sleep(300 * time.Millisecond)
	m.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("events %+v, want 2", got)
	}
	if e := got[0]; len(e.Reasons) != 4 || !e.Resume || !e.Has("addr") || !e.Has("link") {
		t.Errorf("first event %+v: want link, addr, route, resume once each", e)
	}
	if e := got[1]; len(e.Reasons) != 1 || e.Resume || !e.Has("route") {
		t.Errorf("second event %+v", e)
	}
}

// TestWatchClock feeds the watcher a clock that jumps.
func TestWatchClock(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	reports := make(chan string, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchClock(ctx, 10*time.Millisecond, 5*time.Second, clock, func(r string) { reports <- r })
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case r := <-reports:
		t.Fatalf("reported %q with a steady clock", r)
	default:
	}
	mu.Lock()
	now = now.Add(30 * time.Second)
	mu.Unlock()
	select {
	case r := <-reports:
		if r != "resume" {
			t.Errorf("reported %q, want resume", r)
		}
	case <-time.After(2 * time.Second):
		t.Error("no resume after the clock jumped 30 s")
	}
	cancel()
	<-done
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
