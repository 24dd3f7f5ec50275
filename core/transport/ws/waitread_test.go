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
