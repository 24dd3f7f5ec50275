package nettest

import (
	"testing"
	"time"
)

// Waiting is a wait (a readwait.Waiter's WaitRead, say) running in the
// background.
type Waiting struct {
	tb   testing.TB
	done chan bool
}

// StartWait runs wait in the background.
func StartWait(tb testing.TB, wait func() bool) *Waiting {
	w := &Waiting{tb: tb, done: make(chan bool, 1)}
	go func() { w.done <- wait() }()
	return w
}

// Blocked fails tb if the wait ends within 100 ms; what says what it
// should still wait for.
func (w *Waiting) Blocked(what string) {
	w.tb.Helper()
	select {
	case <-w.done:
		w.tb.Fatalf("the wait returned %s", what)
	case <-time.After(100 * time.Millisecond):
	}
}

// Ends fails tb unless the wait ends, reporting true, within 5 s; what
// says what should have ended it.
func (w *Waiting) Ends(what string) {
	w.tb.Helper()
	select {
	case ok := <-w.done:
		if !ok {
			w.tb.Fatalf("the wait could not wait (%s)", what)
		}
	case <-time.After(5 * time.Second):
		w.tb.Fatalf("still waiting 5s after %s", what)
	}
}

// Eventually polls cond until it reports true, failing tb with what and
// the state cond last described if that takes more than 5 s.
func Eventually(tb testing.TB, what string, cond func() (ok bool, state string)) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: %s", what, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
