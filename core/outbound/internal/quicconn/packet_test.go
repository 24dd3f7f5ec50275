package quicconn

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestPacketQueueDeadlines checks the session's deadlines: SetDeadline
// sets both, the write deadline is what the sending half reads, and a
// passed read deadline ends ReadFrom.
func TestPacketQueueDeadlines(t *testing.T) {
	q := NewPacketQueue(1)
	if d := q.WriteDeadline(); !d.IsZero() {
		t.Fatalf("new queue's write deadline %v, want none", d)
	}
	past := time.Now().Add(-time.Second)
	q.SetDeadline(past)
	if d := q.WriteDeadline(); !d.Equal(past) {
		t.Fatalf("write deadline %v after SetDeadline(%v)", d, past)
	}
	if _, _, err := q.ReadFrom(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadFrom past the read deadline: %v", err)
	}
	q.SetWriteDeadline(time.Time{})
	if d := q.WriteDeadline(); !d.IsZero() {
		t.Fatalf("write deadline %v after clearing it", d)
	}
	q.Deliver([]byte("x"), nil)
	q.SetReadDeadline(time.Time{})
	if n, _, err := q.ReadFrom(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("ReadFrom with the deadline cleared: %d, %v", n, err)
	}
}
