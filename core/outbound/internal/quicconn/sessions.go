package quicconn

import (
	"errors"
	"sync"
)

// ID is a UDP session's number on the wire: Hysteria 2's 32-bit session
// ID, TUIC's 16-bit association ID.
type ID interface{ ~uint16 | ~uint32 }

// errSessionsFull is returned by Sessions.Add when every ID is taken.
var errSessionsFull = errors.New("every session ID is in use")

// Sessions is a client's table of open UDP sessions by ID, shared by the
// QUIC connections it dials over its life. The zero value is not usable:
// see NewSessions.
type Sessions[K ID, S any] struct {
	mu   sync.RWMutex
	m    map[K]S // nil once closed
	next K
}

// NewSessions returns an empty table.
func NewSessions[K ID, S any]() *Sessions[K, S] {
	return &Sessions[K, S]{m: make(map[K]S)}
}

// Add gives s the next free ID and records it, calling set(id) under the
// table's lock so that the session knows its ID before anyone can look it
// up. It fails with ErrClientClosed after Close, or when every ID is in
// use.
func (t *Sessions[K, S]) Add(s S, set func(K)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		return ErrClientClosed
	}
	if uint64(len(t.m)) > uint64(^K(0)) {
		return errSessionsFull
	}
	for {
		t.next++
		if _, taken := t.m[t.next]; !taken {
			break
		}
	}
	set(t.next)
	t.m[t.next] = s
	return nil
}

// Get returns the session with id, if it is open.
func (t *Sessions[K, S]) Get(id K) (s S, ok bool) {
	t.mu.RLock()
	s, ok = t.m[id]
	t.mu.RUnlock()
	return s, ok
}

// Remove forgets id if it still names s (a session's own Close).
func (t *Sessions[K, S]) Remove(id K, is func(S) bool) {
	t.mu.Lock()
	if s, ok := t.m[id]; ok && is(s) {
		delete(t.m, id)
	}
	t.mu.Unlock()
}

// Close empties the table for good and returns what was open, for the
// client to shut.
func (t *Sessions[K, S]) Close() []S {
	t.mu.Lock()
	m := t.m
	t.m = nil
	t.mu.Unlock()
	out := make([]S, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	return out
}
