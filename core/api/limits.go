package api

import (
	"context"
	"io"
	"sync"
	"time"
)

// What one member can make the service spend. The service runs as root
// and serves every member; without bounds, 8 concurrent 32 MiB profile
// bodies took it to 0.9 GB, a trickled body held its connection forever
// and 64 unread watch streams locked every other window out.
const (
	// maxInFlight bounds the request body bytes held at once, across all
	// requests: one profile at its maximum and the small requests beside
	// it. A body waits for its share before it is read (the rest stays in
	// the socket); one that cannot get it within bodyTimeout is refused.
	// 8 concurrent 32 MiB profiles (test/service TestServiceBounds): the
	// service peaked at 259 MiB (VmHWM), 1142 MiB without the budget.
	maxInFlight = maxProfile + 8<<20
	// bodyTimeout bounds the reading of one request body. A 32 MiB
	// profile crosses the socket in ~30 ms; a client that trickles it is
	// cut off, and its connection closed.
	bodyTimeout = 10 * time.Second
	// maxWatchers bounds the open /v1/watch streams in all; each holds
	// ~100 KiB (its buffers of notices, events and logs).
	maxWatchers = 128
	// maxPeerWatchers bounds one peer's (one uid's) streams: a window
	// holds one, a `skiff watch` another; one member cannot take the
	// slots of every other.
	maxPeerWatchers = 16
	// watchWriteTimeout bounds the writing of one notice. A reader that
	// has not taken one notice (after the socket's ~200 KiB buffer has
	// filled) in that time is gone: its stream ends and its slot is free.
	watchWriteTimeout = 10 * time.Second
)

// The largest body of any route fits in the budget (else it would wait
// for ever): this fails to compile when it does not.
const _ = uint64(maxInFlight - max(maxProfile, maxImportRequest, maxRequest+maxProbe*64))

// byteBudget is a byte-weighted semaphore.
type byteBudget struct {
	mu   sync.Mutex
	free int64
	more chan struct{} // closed (and replaced) when bytes are released
}

func newByteBudget(n int64) *byteBudget {
	return &byteBudget{free: n, more: make(chan struct{})}
}

// acquire takes n bytes, waiting until they are free or ctx ends.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if n <= b.free {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		more := b.more
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-more:
		}
	}
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.free += n
	close(b.more)
	b.more = make(chan struct{})
	b.mu.Unlock()
}

// bodyShare is a request body holding its share of a byteBudget. When the
// body ends, the share is cut to the bytes it had (a chunked import of a
// URL does not hold the 32 MiB an import may be while its fetch runs);
// release returns the rest.
type bodyShare struct {
	io.ReadCloser
	b    *byteBudget
	mu   sync.Mutex
	held int64 // bytes of b this body holds
	read int64
	end  bool
}

func (s *bodyShare) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read += int64(n)
	if err != nil && !s.end {
		s.end = true
		if extra := s.held - s.read; extra > 0 {
			s.b.release(extra)
			s.held = s.read
		}
	}
	return n, err
}

func (s *bodyShare) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.release(s.held)
	s.held = 0
}

// watchSlots counts the open watch streams, in all and per peer.
type watchSlots struct {
	mu     sync.Mutex
	total  int
	byPeer map[string]int
}

// take reserves a slot for peer, or says why there is none.
func (s *watchSlots) take(peer string, total, perPeer int) (ok bool, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byPeer[peer] >= perPeer:
		return false, "too many open streams of this user; close a window or a `skiff watch`"
	case s.total >= total:
		return false, "too many open streams"
	}
	if s.byPeer == nil {
		s.byPeer = map[string]int{}
	}
	s.byPeer[peer]++
	s.total++
	return true, ""
}

func (s *watchSlots) put(peer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.byPeer[peer]--; s.byPeer[peer] <= 0 {
		delete(s.byPeer, peer)
	}
}
