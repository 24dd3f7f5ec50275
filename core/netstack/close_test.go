package netstack

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestTCPClosedFromTheCore: a flow that the core ends (the connection
// table's close) ends for the app too, at once: its next read sees EOF or
// a reset, not an open connection that no longer goes anywhere.
func TestTCPClosedFromTheCore(t *testing.T) {
	h := newRelayHandler(t)
	app := newStackWith(t, h, Options{})
	c, err := app.DialContextTCPAddrPort(context.Background(), netip.AddrPortFrom(remote4, 443))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 4)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("echo before the close: %v", err)
	}
	(<-h.cancel)() // as the connection table's close does: both sides are still open
	start := time.Now()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	for {
		// The app keeps talking, as the held connection of the service
		// test does; the first write may still be taken.
		if _, err = c.Write([]byte("ping")); err == nil {
			_, err = io.ReadFull(c, buf)
		}
		if err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the app's side saw no close within 3 s of the core's")
	}
	t.Logf("the app saw %v %v after the core closed the flow", err, time.Since(start).Round(time.Millisecond))
}
