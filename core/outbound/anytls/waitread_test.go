package anytls

import (
	"context"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/relay/relaytest"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestIdleStreamHoldsNoBuffer: a relayed AnyTLS stream that goes quiet
// after a bulk echo holds no relay buffer (the stream's WaitRead), and the
// next bytes still come through.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	c := testClient(t, newFakeServer(t, "pw", false), "pw", node.AnyTLSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	up, err := c.DialContext(ctx, "tcp", flow.NameAddr("example.com", 80))
	if err != nil {
		t.Fatal(err)
	}
	relaytest.IdleHoldsNoBuffer(t, relaytest.Relay(t, up), nil)
}

// TestWaitRead: a stream's WaitRead waits until the session has data for
// it, leaves the data to Read, and ends at the read deadline and when the
// stream is closed.
func TestWaitRead(t *testing.T) {
	c := testClient(t, newFakeServer(t, "pw", false), "pw", node.AnyTLSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("example.com", 80))
	if err != nil {
		t.Fatal(err)
	}
	st := conn.(*flowConn)
	w := nettest.StartWait(t, st.WaitRead)
	w.Blocked("before any data")
	if _, err := st.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	w.Ends("the echo came")
	b := make([]byte, 2)
	st.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := st.Read(b); err != nil || string(b[:n]) != "hi" {
		t.Fatalf("read after the wait: %q, %v", b[:n], err)
	}
	w = nettest.StartWait(t, st.WaitRead)
	w.Blocked("after the data was read")

	st.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	w.Ends("the deadline passed")
	st.SetReadDeadline(time.Time{})

	w = nettest.StartWait(t, st.WaitRead)
	w.Blocked("the deadline cleared")
	st.Close()
	w.Ends("the stream closed")
}
