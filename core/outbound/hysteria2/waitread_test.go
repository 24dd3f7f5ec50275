package hysteria2

import (
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/relay/relaytest"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestIdleStreamHoldsNoBuffer: a relayed Hysteria2 stream that goes quiet
// after a bulk echo holds no relay buffer (the stream's WaitRead), and the
// next bytes still come through.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	srv := newTestServer(t, "secret", "", false)
	c := newClient(t, testNode(srv.port(), "secret", ""))
	up, err := c.DialContext(ctxT(t, 10*time.Second), "tcp", flow.AddrFromAddrPort(nettest.TCPEcho(t)))
	if err != nil {
		t.Fatal(err)
	}
	relaytest.IdleHoldsNoBuffer(t, relaytest.Relay(t, up), nil)
}
