package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// notifyConn is an app's socket that calls back when its next bytes come
// (readwait.Notifier), as the TUN's conns do: here a goroutine of the
// test's own waits on the socket, so that the relay's does not.
type notifyConn struct {
	*net.TCPConn
	wait readwait.Waiter
	try  readwait.TryReader

	mu      sync.Mutex
	pending int // notifications asked for and not yet called
}

func newNotifyConn(c *net.TCPConn) *notifyConn {
	n := &notifyConn{TCPConn: c}
	n.wait, n.try = readwait.For(c)
	return n
}

func (n *notifyConn) WaitRead() bool                { return n.wait.WaitRead() }
func (n *notifyConn) TryRead(p []byte) (int, error) { return n.try.TryRead(p) }

func (n *notifyConn) NotifyRead(f func()) bool {
	if n.readable() {
		return false
	}
	n.mu.Lock()
	n.pending++
	n.mu.Unlock()
	go func() {
		n.wait.WaitRead()
		n.mu.Lock()
		n.pending--
		n.mu.Unlock()
		f()
	}()
	return true
}

// WaitReadFor polls the socket for at most d.
func (n *notifyConn) WaitReadFor(d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if n.readable() {
			return true
		}
	}
	return n.readable()
}

// readable reports whether a Read would return at once: bytes, EOF or an
// error (a non-blocking peek).
func (n *notifyConn) readable() bool {
	rc, err := n.TCPConn.SyscallConn()
	if err != nil {
		return true
	}
	ready := true
	rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ready = err != syscall.EAGAIN
		return true
	})
	return ready
}

// boomConn is an upstream whose Write of "boom" panics.
type boomConn struct{ *net.TCPConn }

func (b boomConn) Write(p []byte) (int, error) {
	if string(p) == "boom" {
		panic("boom")
	}
	return b.TCPConn.Write(p)
}

// relayDirections counts the goroutines that run a relay direction of
// their own (half.run).
func relayDirections() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("relay.(*half).run"))
}

// TestStreamWaitsWithoutGoroutine checks that Stream's upload direction,
// whose source is a readwait.Notifier, holds no goroutine while it waits
// and goes on when the source's bytes come, both ways, to the end of the
// flow however it ends: the app's half-close, the context, a panic on the
// goroutine the callback started. Stream returns only after the direction
// has ended.
func TestStreamWaitsWithoutGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     func(app, up *net.TCPConn, cancel context.CancelFunc)
		wantErr func(error) bool
	}{
		{"the app half-closes", func(app, up *net.TCPConn, _ context.CancelFunc) {
			app.CloseWrite()
			if _, err := io.ReadAll(up); err != nil {
				t.Errorf("upstream read to EOF: %v", err)
			}
			up.Close()
		}, func(err error) bool { return err == nil }},
		{"the context ends", func(_, _ *net.TCPConn, cancel context.CancelFunc) { cancel() },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"a panic after the wait", func(app, _ *net.TCPConn, _ context.CancelFunc) { app.Write([]byte("boom")) },
			func(err error) bool { var pe *guard.PanicError; return errors.As(err, &pe) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, appRelay := tcpPair(t)
			upRelay, up := tcpPair(t)
			src := newNotifyConn(appRelay)
			bufs := NewBuffers(0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- Stream(ctx, bufs, src, boomConn{upRelay}, nil, nil) }()

			roundTrip := func(what string, from, to *net.TCPConn, msg []byte) {
				t.Helper()
				go from.Write(msg)
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(to, got); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("%s: %d bytes, %v", what, len(got), err)
				}
			}
			waiting := func(what string) {
				t.Helper()
				nettest.Eventually(t, "no relay goroutine "+what, func() (bool, string) {
					src.mu.Lock()
					p := src.pending
					src.mu.Unlock()
					return relayDirections() == 0 && p == 1 && bufs.Held() <= 1, ""
				})
			}
			roundTrip("upload", app, up, []byte("hello"))
			waiting("after the first bytes")
			roundTrip("upload of 1 MiB", app, up, bytes.Repeat([]byte("u"), 1<<20))
			roundTrip("download of 1 MiB", up, app, bytes.Repeat([]byte("d"), 1<<20))
			waiting("after bulk both ways")
			roundTrip("upload after the quiet", app, up, []byte("again"))

			tc.end(app, up, cancel)
			if err := <-done; !tc.wantErr(err) {
				t.Fatalf("Stream: %v", err)
			}
			if n := relayDirections(); n != 0 {
				t.Errorf("%d relay goroutines after Stream returned", n)
			}
			if bufs.Held() != 0 {
				t.Errorf("%d buffers held after Stream returned", bufs.Held())
			}
		})
	}
}
