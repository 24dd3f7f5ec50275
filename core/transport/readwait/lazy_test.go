package readwait

import (
	"net"
	"testing"
)

// wrapped is a Wrapper that counts how often it is asked.
type wrapped struct {
	net.Conn
	asked int
}

func (w *wrapped) ReadWaiters() (Waiter, TryReader) {
	w.asked++
	return nil, w
}

func (w *wrapped) TryRead([]byte) (int, error) { return 0, nil }

func TestLazy(t *testing.T) {
	c := &wrapped{}
	var l Lazy
	if c.asked != 0 {
		t.Fatal("asked before Of")
	}
	for range 3 {
		w, tr := l.Of(c)
		if w != nil || tr != TryReader(c) {
			t.Fatalf("Of = %v, %v; want nil, the conn", w, tr)
		}
	}
	if c.asked != 1 {
		t.Fatalf("For asked the conn %d times, want once", c.asked)
	}
}
