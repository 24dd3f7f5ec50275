package quicconn

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// TestPacketQueueDeadlines checks the session's deadlines: SetDeadline
// sets both, the write deadline is what the sending half reads, and a
// passed read deadline ends ReadFrom.
func TestPacketQueueDeadlines(t *testing.T) {
	q := NewPacketQueue(nil, Sender{})
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

// TestDestEncode: a session's destination is encoded once while it stays
// the same, again when it changes, and a failed encoding keeps the last.
func TestDestEncode(t *testing.T) {
	a := flow.NameAddr("a.example", 53)
	b := flow.NameAddr("b.example", 53)
	bad := flow.NameAddr("bad.example", 53)
	calls := 0
	enc := func(buf []byte, dst flow.Addr) ([]byte, error) {
		calls++
		if dst == bad {
			return buf, errors.New("too long")
		}
		return append(buf, dst.String()...), nil
	}
	var d Dest
	for i, tt := range []struct {
		dst     flow.Addr
		want    string
		wantErr bool
		calls   int
	}{
		{a, "a.example:53", false, 1},
		{a, "a.example:53", false, 1},
		{b, "b.example:53", false, 2},
		{bad, "", true, 3},
		{b, "b.example:53", false, 3},
		{a, "a.example:53", false, 4},
	} {
		got, err := d.Encode(tt.dst, enc)
		if (err != nil) != tt.wantErr || string(got) != tt.want || calls != tt.calls {
			t.Fatalf("step %d: Encode(%v) = %q, %v after %d encodings; want %q, error %v, %d encodings",
				i, tt.dst, got, err, calls, tt.want, tt.wantErr, tt.calls)
		}
	}
}
