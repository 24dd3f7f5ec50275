package core

import "sync"

// hub fans values out to subscribers without ever blocking the publisher:
// a subscriber whose channel is full misses the value (and can catch up
// from a snapshot such as Status or Logs).
type hub[T any] struct {
	mu   sync.Mutex
	subs map[chan T]struct{}
}

// subscribe returns a channel of the values published from now on, with
// room for buf of them, and a func that ends the subscription and closes
// the channel.
func (h *hub[T]) subscribe(buf int) (<-chan T, func()) {
	if buf < 1 {
		buf = 1
	}
	ch := make(chan T, buf)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = make(map[chan T]struct{})
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, ch)
			close(ch)
			h.mu.Unlock()
		})
	}
}

// publish offers v to every subscriber that has room for it.
func (h *hub[T]) publish(v T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- v:
		default:
		}
	}
}
