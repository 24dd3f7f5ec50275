package tuic

import (
	"context"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/relay/relaytest"
)

// TestIdleStreamHoldsNoBuffer: a relayed TUIC stream that goes quiet after
// a bulk echo holds no relay buffer (the stream's WaitRead), and the next
// bytes still come through.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	s := newTestServer(t, "pw")
	c := testClient(t, s, "pw", node.TUICOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	up, err := c.DialContext(ctx, "tcp", flow.NameAddr("echo.test", 7))
	if err != nil {
		t.Fatal(err)
	}
	relaytest.IdleHoldsNoBuffer(t, relaytest.Relay(t, up), nil)
}
