package tlsconf

import (
	"io"
	"testing"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestWaitRead checks that WaitRead waits for the next record without
// reading it, returns at once while crypto/tls still holds plaintext, and
// declines before the first Read (the handshake may still be running).
func TestWaitRead(t *testing.T) {
	c, send := idlePair(t)
	if c.WaitRead() {
		t.Fatal("WaitRead waited before the first Read")
	}
	send <- []byte("first")
	if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	w := nettest.StartWait(t, c.WaitRead)
	w.Blocked("on a quiet connection")
	send <- []byte("0123456789")
	w.Ends("a record came")
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "0123" {
		t.Fatalf("read after the wait: %q, %v", b, err)
	}
	// Six bytes of the record wait in crypto/tls: no waiting for the socket.
	nettest.StartWait(t, c.WaitRead).Ends("with plaintext held by crypto/tls")
	b = make([]byte, 6)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "456789" {
		t.Fatalf("read of the rest: %q, %v", b, err)
	}
}
