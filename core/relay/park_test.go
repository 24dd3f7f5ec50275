package relay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// waitHeld polls until bs holds want buffers, failing t after a while.
func waitHeld(t *testing.T, bs *Buffers, want int64, what string) {
	t.Helper()
	nettest.Eventually(t, what, func() (bool, string) {
		return bs.Held() == want, fmt.Sprintf("%d buffers held (%d bytes of grown ones), want %d", bs.Held(), bs.InUse(), want)
	})
}

// TestIdleStreamHoldsNoBuffer checks that both directions of a stream
// between sockets give their buffers back while they wait for their
// source, also after a bulk transfer that grew them (a last read of 16 KiB
// or more kept a grown buffer before), and take one again on the next
// byte.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	bs := NewBuffers(0)
	app, appRelay := tcpPair(t)
	upRelay, up := tcpPair(t)
	done := make(chan error, 1)
	go func() { done <- Stream(context.Background(), bs, appRelay, upRelay, nil, nil) }()
	waitHeld(t, bs, 0, "new stream")

	bulk := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for _, p := range [][2]net.Conn{{app, up}, {up, app}} {
		go p[0].Write(bulk)
		if _, err := io.ReadFull(p[1], make([]byte, len(bulk))); err != nil {
			t.Fatal(err)
		}
	}
	waitHeld(t, bs, 0, "after a bulk transfer each way")
	if u := bs.InUse(); u != 0 {
		t.Fatalf("%d bytes of the budget in use by an idle stream", u)
	}

	for _, p := range [][2]net.Conn{{app, up}, {up, app}} {
		if _, err := p[0].Write([]byte("next")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(p[1], b); err != nil || string(b) != "next" {
			t.Fatalf("after the idle spell: %q, %v", b, err)
		}
	}
	waitHeld(t, bs, 0, "idle again")
	app.Close()
	up.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waiter is a conn over a pipe that waits for its next bytes without
// reading them (readwait.Waiter): a goroutine reads ahead one chunk at a
// time into pending.
type waiter struct {
	net.Conn // writes; reads come from pending
	ready    chan struct{}
	pending  chan []byte
	rest     []byte
	waits    atomic.Int64
}

func newWaiter(c net.Conn) *waiter {
	w := &waiter{Conn: c, ready: make(chan struct{}, 1), pending: make(chan []byte, 1)}
	go func() {
		defer close(w.pending)
		for {
			b := make([]byte, 1<<20)
			n, err := c.Read(b)
			if n > 0 {
				w.pending <- b[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return w
}

func (w *waiter) WaitRead() bool {
	w.waits.Add(1)
	if len(w.rest) == 0 {
		b, ok := <-w.pending
		if !ok {
			return true // EOF: Read reports it
		}
		w.rest = b
	}
	return true
}

func (w *waiter) Read(p []byte) (int, error) {
	if len(w.rest) == 0 {
		b, ok := <-w.pending
		if !ok {
			return 0, io.EOF
		}
		w.rest = b
	}
	n := copy(p, w.rest)
	w.rest = w.rest[n:]
	return n, nil
}

// TestParkKeepsTheGrownSize checks that a direction whose source can wait
// gives its buffer back before every wait but takes one of the size it had
// after it: a bulk flow still reads into a grown buffer.
func TestParkKeepsTheGrownSize(t *testing.T) {
	bs := NewBuffers(0)
	srcApp, srcPeer := net.Pipe()
	dstApp, dstPeer := net.Pipe()
	w := newWaiter(srcApp)
	src := &sizeConn{Conn: w, sizes: make(chan int, 1)}
	done := make(chan error, 1)
	var lu, ld atomic.Bool
	go func() { done <- copyHalf(bs, dstApp, &waitSizeConn{src, w}, nopCounter{}, &lu, &ld) }()
	var got []int
	buf := make([]byte, BufferSize)
	for _, n := range []int{SmallBufferSize, MediumBufferSize, 100} {
		go srcPeer.Write(make([]byte, n))
		got = append(got, <-src.sizes)
		if bs.Held() != 1 {
			t.Errorf("read %d: %d buffers held, want 1", len(got), bs.Held())
		}
		if _, err := io.ReadFull(dstPeer, buf[:n]); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, bs, 0, "waiting for the source")
	}
	srcPeer.Close()
	got = append(got, <-src.sizes)
	dstPeer.Close()
	<-done
	want := []int{SmallBufferSize, BufferSize, BufferSize, SmallBufferSize}
	if len(got) != len(want) {
		t.Fatalf("read sizes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("read sizes %v, want %v", got, want)
		}
	}
	if w.waits.Load() < 3 {
		t.Fatalf("%d waits, want one before every read", w.waits.Load())
	}
	if bs.Held() != 0 || bs.InUse() != 0 {
		t.Fatalf("%d buffers, %d bytes of the budget held after the copy", bs.Held(), bs.InUse())
	}
}

// waitSizeConn is a sizeConn whose WaitRead is w's.
type waitSizeConn struct {
	*sizeConn
	w *waiter
}

func (c *waitSizeConn) WaitRead() bool { return c.w.WaitRead() }

// tryWaiter is a waiter that can also read what it holds without waiting
// (readwait.TryReader).
type tryWaiter struct {
	*waiter
	tries, got atomic.Int64
}

func (w *tryWaiter) TryRead(p []byte) (int, error) {
	w.tries.Add(1)
	if len(w.rest) == 0 {
		select {
		case b, ok := <-w.pending:
			if !ok {
				return 0, nil // EOF: Read reports it
			}
			w.rest = b
		default:
			return 0, nil
		}
	}
	n := copy(p, w.rest)
	w.rest = w.rest[n:]
	w.got.Add(1)
	return n, nil
}

// TestBulkReadsDoNotWait checks that a direction whose source can read
// without waiting (TryRead) waits only when that finds nothing: a bulk
// transfer whose bytes are all there reads them with one wait before the
// first read and one after the last, and the direction holds no buffer
// while it waits.
func TestBulkReadsDoNotWait(t *testing.T) {
	bs := NewBuffers(0)
	srcApp, srcPeer := net.Pipe()
	dstApp, dstPeer := net.Pipe()
	src := &tryWaiter{waiter: newWaiter(srcApp)}
	done := make(chan error, 1)
	var lu, ld atomic.Bool
	go func() { done <- copyHalf(bs, dstApp, src, nopCounter{}, &lu, &ld) }()

	bulk := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, read ahead in one piece
	go srcPeer.Write(bulk)
	got := make([]byte, len(bulk))
	if _, err := io.ReadFull(dstPeer, got); err != nil || !bytes.Equal(got, bulk) {
		t.Fatalf("bulk copy: %v (equal %v)", err, bytes.Equal(got, bulk))
	}
	waitHeld(t, bs, 0, "after the bulk transfer")
	if w, g := src.waits.Load(), src.got.Load(); w != 2 || g < int64(len(bulk)/BufferSize) {
		t.Fatalf("%d waits and %d reads without waiting for 1 MiB that was all there, want 2 and at least %d", w, g, len(bulk)/BufferSize)
	}

	// A small read says the source is drained: the next one waits.
	for i := range 2 {
		go srcPeer.Write([]byte("next"))
		b := make([]byte, 4)
		if _, err := io.ReadFull(dstPeer, b); err != nil || string(b) != "next" {
			t.Fatalf("after the bulk transfer: %q, %v", b, err)
		}
		waitHeld(t, bs, 0, "idle again")
		if w := src.waits.Load(); w != int64(3+i) {
			t.Fatalf("%d waits after %d small reads, want %d", w, i+1, 3+i)
		}
	}
	srcPeer.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	dstPeer.Close()
}
