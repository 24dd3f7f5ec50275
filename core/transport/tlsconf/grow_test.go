package tlsconf

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestRecordBufferGrows checks that a connection whose reads leave whole
// records waiting gets a large record buffer within its budget, that the
// data stays intact across the swap, and that the buffer goes back to the
// budget when the connection turns quiet and when it closes.
func TestRecordBufferGrows(t *testing.T) {
	t.Run("crypto-tls", func(t *testing.T) { testRecordBufferGrows(t) })
	t.Run("utls", func(t *testing.T) { testRecordBufferGrows(t, "chrome") })
}

func testRecordBufferGrows(t *testing.T, fp ...string) {
	g := NewGrown(BigRecordBuffer) // one large buffer
	c1, send1 := idlePair(t, fp...)
	c2, send2 := idlePair(t, fp...)
	c1.grow, c2.grow = g, g
	bulk := make([]byte, 1<<20)
	for i := range bulk {
		bulk[i] = byte(i * 7 / 5)
	}
	go func() { send1 <- bulk; send2 <- bulk }()
	time.Sleep(200 * time.Millisecond) // the kernel holds more than a record buffer takes
	for i, c := range []*Conn{c1, c2} {
		got := make([]byte, len(bulk))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bulk) {
			t.Fatalf("conn %d: data changed across the buffer swap", i+1)
		}
	}
	if !c1.big.Load() || c1.rec.raw.Cap() < BigRecordBuffer {
		t.Fatalf("backlogged connection kept a %d-byte record buffer", c1.rec.raw.Cap())
	}
	if c2.big.Load() || g.InUse() != BigRecordBuffer {
		t.Fatalf("second connection got a large buffer past the budget (in use %d)", g.InUse())
	}
	// Quiet: the reader waits, the buffer goes.
	done := make(chan struct{})
	go func() {
		c1.Read(make([]byte, 10))
		close(done)
	}()
	deadline := time.Now().Add(idleRelease + 5*time.Second)
	for g.InUse() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if g.InUse() != 0 {
		t.Fatalf("quiet connection still counts %d bytes of large buffers", g.InUse())
	}
	send1 <- []byte("x")
	<-done
	// Closing gives it back too.
	go func() { send2 <- bulk }()
	time.Sleep(200 * time.Millisecond)
	if _, err := io.ReadFull(c2, make([]byte, len(bulk))); err != nil {
		t.Fatal(err)
	}
	if !c2.big.Load() {
		t.Fatal("backlogged connection got no large buffer with the budget free")
	}
	c2.Close()
	if g.InUse() != 0 {
		t.Fatalf("closed connection still counts %d bytes of large buffers", g.InUse())
	}
}
