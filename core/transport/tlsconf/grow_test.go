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

// TestRecordBufferFitted checks that while the budget of large buffers is
// spent, a busy connection's record buffer stays at one record's room
// across reads of every size, by Read and TryRead, with the data intact;
// and that it asks for a large buffer once the budget has room.
func TestRecordBufferFitted(t *testing.T) {
	t.Run("crypto-tls", func(t *testing.T) { testRecordBufferFitted(t) })
	t.Run("utls", func(t *testing.T) { testRecordBufferFitted(t, "chrome") })
}

func testRecordBufferFitted(t *testing.T, fp ...string) {
	g := NewGrown(BigRecordBuffer)
	g.take(BigRecordBuffer) // another connection holds it
	c, send := idlePair(t, fp...)
	c.grow = g
	bulk := make([]byte, 4<<20)
	for i := range bulk {
		bulk[i] = byte(i * 7 / 5)
	}
	go func() {
		for p := bulk; len(p) > 0; p = p[min(len(p), 100<<10):] {
			send <- p[:min(len(p), 100<<10)]
		}
	}()
	got := make([]byte, 0, len(bulk))
	sizes := []int{60 << 10, 4 << 10, 16 << 10, 1, 100, 60 << 10}
	maxCap := 0
	for i := 0; len(got) < len(bulk); i++ {
		p := make([]byte, min(sizes[i%len(sizes)], len(bulk)-len(got)))
		var n int
		var err error
		if i%3 == 2 {
			n, err = c.TryRead(p)
		} else {
			n, err = c.Read(p)
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p[:n]...)
		if i > 4 { // past the first record.s growth
			maxCap = max(maxCap, c.rec.raw.Cap())
		}
	}
	if !bytes.Equal(got, bulk) {
		t.Fatal("data changed in a fitted record buffer")
	}
	if !c.fitted || maxCap > 20<<10 {
		t.Fatalf("record buffer grew to %d bytes with the budget spent (fitted %v), want at most 20 KiB", maxCap, c.fitted)
	}
	if c.big.Load() {
		t.Fatal("a large buffer past the budget")
	}
	// The budget has room again: a backlog makes the buffer large.
	g.used.Add(-BigRecordBuffer)
	go func() { send <- bulk }()
	time.Sleep(200 * time.Millisecond) // the kernel holds more than a record
	if _, err := io.ReadFull(c, make([]byte, len(bulk))); err != nil {
		t.Fatal(err)
	}
	if !c.big.Load() {
		t.Fatal("fitted connection with a backlog got no large buffer once the budget had room")
	}
}

// TestFitRecords checks fitRecords on the buffers it meets: whatever the
// buffer holds, the record ahead then fits in its room, so crypto/tls
// never grows it, and the buffer stays within fitRecordCap.
func TestFitRecords(t *testing.T) {
	header := func(size int) []byte { return []byte{23, 3, 3, byte(size >> 8), byte(size)} }
	full := maxRecord - 5
	tests := []struct {
		name    string
		cap     int
		skip    int    // consumed bytes at the front
		held    []byte // what the buffer holds of the record ahead
		next    int    // that record's size on the wire, header included
		wantCap int    // 0: unchanged
	}{
		{"empty small", 4 << 10, 0, nil, maxRecord, 0},
		{"empty from the handshake", 16 << 10, 0, nil, maxRecord, fitRecordBuffer},
		{"partial header from the handshake", 16 << 10, 100, []byte{23, 3}, maxRecord, fitRecordBuffer},
		{"header of a small record", 16 << 10, 0, header(100), 105, 0},
		{"header of a full record", 16 << 10, 0, header(full), maxRecord, fitRecordBuffer},
		{"doubled", 32 << 10, 0, header(full), maxRecord, fitRecordBuffer},
		{"fitted, record at the back", fitRecordBuffer, 15 << 10, header(full), maxRecord, 0},
		{"fitted, empty", fitRecordBuffer, 0, nil, maxRecord, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bytes.NewBuffer(make([]byte, 0, tt.cap))
			b.Write(make([]byte, tt.skip))
			b.Next(tt.skip)
			b.Write(tt.held)
			c := &Conn{rec: records{raw: b, in: &bytes.Reader{}}}
			before := b.Cap()
			c.fitRecords()
			if !bytes.Equal(b.Bytes(), tt.held) {
				t.Fatalf("buffer holds %x, want %x", b.Bytes(), tt.held)
			}
			if tt.wantCap != 0 && b.Cap() < tt.wantCap || tt.wantCap == 0 && b.Cap() != before {
				t.Fatalf("capacity %d -> %d, want %d (0: unchanged)", before, b.Cap(), tt.wantCap)
			}
			// What crypto/tls does for the record ahead: room for it and
			// bytes.MinRead.
			c0 := b.Cap()
			b.Grow(tt.next - b.Len() + bytes.MinRead)
			if b.Cap() > fitRecordCap {
				t.Fatalf("the record ahead grew the buffer from %d to %d", c0, b.Cap())
			}
		})
	}
}
