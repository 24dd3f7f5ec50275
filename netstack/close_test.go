package netstack

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// closingHandler relays each stream like the engine does and ends it when
// close is closed, as the connection table's close does (the relay's
// context is cancelled while both sides are still open).
type closingHandler struct {
	upstream string
	close    chan struct{}
}

func (h *closingHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	up, err := net.Dial("tcp", h.upstream)
	if err != nil {
		return err
	}
	app, err := accept()
	if err != nil {
		up.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-h.close:
		case <-ctx.Done():
		}
		cancel()
	}()
	return relay.Stream(ctx, relay.NewBuffers(relay.DefaultBudget), app, up, nil, nil)
}

func (h *closingHandler) HandlePacket(ctx context.Context, m flow.Metadata, conn net.PacketConn) error {
	return conn.Close()
}

// TestTCPClosedFromTheCore: a flow that the core ends (the connection
// table's close) ends for the app too, at once: its next read sees EOF or
// a reset, not an open connection that no longer goes anywhere.
func TestTCPClosedFromTheCore(t *testing.T) {
	h := &closingHandler{upstream: nettest.TCPEcho(t).String(), close: make(chan struct{})}
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
	close(h.close)
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
