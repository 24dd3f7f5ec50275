package ws

import (
	"io"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestWaitRead checks that WaitRead waits for the server's next frame
// without reading it, over plain TCP and over TLS, and returns at once
// while part of a frame is already here.
func TestWaitRead(t *testing.T) {
	forEachTransport(t, func(t *testing.T, secure bool) {
		s := &server{t: t, secure: secure, path: "/tunnel"}
		addr := s.start(t)
		c := s.dial(t, addr, Config{Host: "example.com", Path: "/tunnel"})
		c.SetDeadline(time.Time{})
		if _, err := c.Write([]byte("first")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
			t.Fatal(err)
		}
		w := nettest.StartWait(t, c.WaitRead)
		w.Blocked("on a quiet connection")
		if _, err := c.Write([]byte("0123456789")); err != nil { // echoed
			t.Fatal(err)
		}
		w.Ends("a frame came")
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "0123" {
			t.Fatalf("read after the wait: %q, %v", b, err)
		}
		nettest.StartWait(t, c.WaitRead).Ends("with the rest of a frame here")
		b = make([]byte, 6)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "456789" {
			t.Fatalf("read of the rest: %q, %v", b, err)
		}
	})
}

// TestTryRead checks that TryRead never waits and returns what a Read
// would have at once: over TLS, what the kernel has received too; over
// plain TCP, what the reader has buffered.
func TestTryRead(t *testing.T) {
	forEachTransport(t, func(t *testing.T, secure bool) {
		s := &server{t: t, secure: secure, path: "/tunnel"}
		addr := s.start(t)
		c := s.dial(t, addr, Config{Host: "example.com", Path: "/tunnel"})
		c.SetDeadline(time.Time{})
		b := make([]byte, 64)
		if n, err := c.TryRead(b); n != 0 || err != nil {
			t.Fatalf("TryRead before anything came: %d, %v; want 0, nil", n, err)
		}
		if _, err := c.Write([]byte("0123456789")); err != nil { // echoed
			t.Fatal(err)
		}
		nettest.StartWait(t, c.WaitRead).Ends("a frame came")
		var got []byte
		if secure {
			nettest.Eventually(t, "the echo through TryRead", func() (bool, string) {
				n, err := c.TryRead(b)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b[:n]...)
				return len(got) >= 10, string(got)
			})
		} else {
			n, err := c.TryRead(b)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b[:n]...)
		}
		rest := make([]byte, 10-len(got))
		if _, err := io.ReadFull(c, rest); err != nil {
			t.Fatal(err)
		}
		if got = append(got, rest...); string(got) != "0123456789" {
			t.Fatalf("TryRead and Read: %q", got)
		}
		if n, err := c.TryRead(b); n != 0 || err != nil {
			t.Fatalf("TryRead with everything read: %d, %v; want 0, nil", n, err)
		}
	})
}
