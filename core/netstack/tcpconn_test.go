package netstack

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// connHandler hands the app side of each TCP flow to the test and holds the
// flow until the test is done with it.
type connHandler struct {
	conns chan net.Conn
	done  chan struct{}
}

func (h *connHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	c, err := accept()
	if err != nil {
		return err
	}
	defer c.Close()
	h.conns <- c
	select {
	case <-h.done:
	case <-ctx.Done():
	}
	return nil
}

func (h *connHandler) HandlePacket(ctx context.Context, m flow.Metadata, conn net.PacketConn) error {
	return conn.Close()
}

// TestTCPConnWaitRead checks that the app's conn waits for the app's next
// bytes without reading them, and that the wait ends at data, at the read
// deadline (also one set while it waits), at the app's FIN and at Close.
func TestTCPConnWaitRead(t *testing.T) {
	h := &connHandler{conns: make(chan net.Conn, 1), done: make(chan struct{})}
	defer close(h.done)
	app := newStackWith(t, h, Options{})
	dial := func() (net.Conn, readwait.Waiter) {
		t.Helper()
		a, err := app.DialContextTCPAddrPort(context.Background(), netip.AddrPortFrom(remote4, 443))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		c := <-h.conns
		w, ok := c.(readwait.Waiter)
		if !ok {
			t.Fatalf("the app's conn %T cannot wait for reads", c)
		}
		return a, w
	}

	a, w := dial()
	c := w.(net.Conn)
	wt := nettest.StartWait(t, w.WaitRead)
	wt.Blocked("before the app sent anything")
	a.Write([]byte("hello"))
	wt.Ends("the app's bytes")
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
		t.Fatalf("read after the wait: %q, %v", b, err)
	}

	wt = nettest.StartWait(t, w.WaitRead)
	wt.Blocked("with everything read")
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	wt.Ends("a read deadline set while waiting")
	var ne net.Error
	if _, err := c.Read(b); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})

	wt = nettest.StartWait(t, w.WaitRead)
	wt.Blocked("after the deadline was cleared")
	a.Close()
	wt.Ends("the app's FIN")
	if _, err := c.Read(b); err != io.EOF {
		t.Fatalf("read after the app's FIN: %v, want EOF", err)
	}

	_, w = dial()
	wt = nettest.StartWait(t, w.WaitRead)
	wt.Blocked("on a second, quiet flow")
	w.(net.Conn).Close()
	wt.Ends("Close")
}

// TestTCPConnTryRead checks that the app's conn reads what the endpoint
// holds without waiting (readwait.TryReader) and leaves the app's FIN to
// Read.
func TestTCPConnTryRead(t *testing.T) {
	h := &connHandler{conns: make(chan net.Conn, 1), done: make(chan struct{})}
	defer close(h.done)
	app := newStackWith(t, h, Options{})
	a, err := app.DialContextTCPAddrPort(context.Background(), netip.AddrPortFrom(remote4, 443))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c := <-h.conns
	tr, ok := c.(readwait.TryReader)
	if !ok {
		t.Fatalf("the app's conn %T cannot read without waiting", c)
	}
	b := make([]byte, 16)
	if n, err := tr.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of a quiet flow: %d, %v; want 0, nil", n, err)
	}
	a.Write([]byte("hello"))
	var got []byte
	nettest.Eventually(t, "the app's bytes", func() (bool, string) {
		n, err := tr.TryRead(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b[:n]...)
		return len(got) >= 5, string(got)
	})
	if string(got) != "hello" {
		t.Fatalf("TryRead: %q", got)
	}
	a.Close()
	nettest.StartWait(t, c.(readwait.Waiter).WaitRead).Ends("the app's FIN")
	if n, err := tr.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead at the FIN: %d, %v; want 0, nil", n, err)
	}
	if _, err := c.Read(b); err != io.EOF {
		t.Fatalf("Read at the FIN: %v, want EOF", err)
	}
}

// TestTCPConnNotifyRead checks that the app's conn calls back, without a
// goroutine waiting, once a Read would return at once: at the app's bytes,
// its FIN, a read deadline passing or changing, and Close; and that it
// says so at once, calling nothing, when a Read would return now.
func TestTCPConnNotifyRead(t *testing.T) {
	h := &connHandler{conns: make(chan net.Conn, 1), done: make(chan struct{})}
	defer close(h.done)
	app := newStackWith(t, h, Options{})
	dial := func(t *testing.T) (a, c net.Conn, n readwait.Notifier) {
		t.Helper()
		a, err := app.DialContextTCPAddrPort(context.Background(), netip.AddrPortFrom(remote4, 443))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		c = <-h.conns
		t.Cleanup(func() { c.Close() })
		n, ok := c.(readwait.Notifier)
		if !ok {
			t.Fatalf("the app's conn %T cannot call back", c)
		}
		return a, c, n
	}
	// notify starts a notification whose callback the returned wait
	// watches, as nettest.StartWait watches a blocking wait.
	notify := func(t *testing.T, n readwait.Notifier) *nettest.Waiting {
		t.Helper()
		called := make(chan struct{})
		if !n.NotifyRead(func() { close(called) }) {
			t.Fatal("NotifyRead on a quiet flow: false, want a callback")
		}
		return nettest.StartWait(t, func() bool { <-called; return true })
	}

	for _, tc := range []struct {
		name string
		end  func(a, c net.Conn) // ends the wait
		read string              // what a Read returns then: "hello", an error "EOF", "timeout" or any "error"
	}{
		{"the app's bytes", func(a, c net.Conn) { a.Write([]byte("hello")) }, "hello"},
		{"the app's FIN", func(a, c net.Conn) { a.Close() }, "EOF"},
		{"a read deadline set while waiting", func(a, c net.Conn) { c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)) }, "timeout"},
		{"Close", func(a, c net.Conn) { c.Close() }, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, c, n := dial(t)
			w := notify(t, n)
			w.Blocked("before anything happened")
			tc.end(a, c)
			w.Ends(tc.name)
			if tc.read == "timeout" {
				// The new deadline calls back at once; asked again, the
				// conn calls back when it passes.
				w = notify(t, n)
				w.Ends("the deadline passing")
			}
			b := make([]byte, 5)
			got, err := io.ReadFull(c, b)
			var ne net.Error
			if ok := map[string]bool{
				"hello":   err == nil && string(b) == "hello",
				"EOF":     err == io.EOF,
				"timeout": errors.As(err, &ne) && ne.Timeout(),
				"error":   err != nil,
			}[tc.read]; !ok {
				t.Fatalf("read after the callback: %q, %v; want %s", b[:got], err, tc.read)
			}
		})
	}

	t.Run("WaitReadFor", func(t *testing.T) {
		a, _, n := dial(t)
		if n.WaitReadFor(20 * time.Millisecond) {
			t.Fatal("WaitReadFor on a quiet flow: true, want false once the limit passed")
		}
		w := nettest.StartWait(t, func() bool { return n.WaitReadFor(time.Minute) })
		w.Blocked("within its limit")
		a.Write([]byte("hi"))
		w.Ends("the app's bytes")
	})

	t.Run("ready now", func(t *testing.T) {
		a, c, n := dial(t)
		a.Write([]byte("hi"))
		nettest.StartWait(t, c.(readwait.Waiter).WaitRead).Ends("the app's bytes")
		if n.NotifyRead(func() { t.Error("called back for bytes already there") }) {
			t.Fatal("NotifyRead with bytes there: true, want false")
		}
		c.SetReadDeadline(time.Now().Add(-time.Second))
		io.ReadFull(c, make([]byte, 2))
		if n.NotifyRead(func() { t.Error("called back past the deadline") }) {
			t.Fatal("NotifyRead past the read deadline: true, want false")
		}
		c.SetReadDeadline(time.Time{})
		c.Close()
		if n.NotifyRead(func() { t.Error("called back on a closed conn") }) {
			t.Fatal("NotifyRead on a closed conn: true, want false")
		}
	})
}
