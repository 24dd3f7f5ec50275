package stats

import (
	"context"
	"sync"
	"time"
)

// Window is how many one-second samples the sampler keeps.
const Window = 60

// Sample is the throughput over one second.
type Sample struct {
	Time     time.Time // end of the second
	Up, Down int64     // bytes per second
}

// sampler keeps the last Window samples in a ring.
type sampler struct {
	mu       sync.Mutex
	ring     [Window]Sample
	n        int // samples stored, ≤ Window
	next     int // ring index of the next sample
	lastUp   int64
	lastDown int64
	lastTime time.Time
}

// Run samples the totals every second until ctx ends. Run it on one
// goroutine per Stats.
func (s *Stats) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	s.sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.sample(now)
		}
	}
}

// sample records the rate since the previous call. The first call only
// sets the starting point.
func (s *Stats) sample(now time.Time) {
	up, down := s.Totals()
	p := &s.sampler
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.lastTime.IsZero() {
		dt := now.Sub(p.lastTime).Seconds()
		if dt <= 0 {
			return
		}
		p.ring[p.next] = Sample{
			Time: now,
			Up:   int64(float64(up-p.lastUp) / dt),
			Down: int64(float64(down-p.lastDown) / dt),
		}
		p.next = (p.next + 1) % Window
		if p.n < Window {
			p.n++
		}
	}
	p.lastUp, p.lastDown, p.lastTime = up, down, now
}

// Series returns the stored samples, oldest first (at most Window).
func (s *Stats) Series() []Sample {
	p := &s.sampler
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Sample, p.n)
	start := (p.next - p.n + Window) % Window
	for i := range out {
		out[i] = p.ring[(start+i)%Window]
	}
	return out
}

// Rate returns the latest sample, or a zero Sample before the first second.
func (s *Stats) Rate() Sample {
	p := &s.sampler
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return Sample{}
	}
	return p.ring[(p.next-1+Window)%Window]
}
