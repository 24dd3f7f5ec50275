package hysteria2

import (
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestNetworkChangedRedials: after NetworkChanged the next flow gets a new
// QUIC connection from a new socket, and the old connection is closed once
// the new one is up.
func TestNetworkChangedRedials(t *testing.T) {
	tcpEcho := flow.AddrFromAddrPort(nettest.TCPEcho(t))
	srv := newTestServer(t, "secret", "", false)
	c := newClient(t, testNode(srv.port(), "secret", ""))
	echoTCP(t, c, tcpEcho, 1000)
	first, _ := c.conns.Current()
	if first == nil {
		t.Fatal("no connection after a flow")
	}

	c.NetworkChanged()
	echoTCP(t, c, tcpEcho, 1000)
	second, _ := c.conns.Current()
	if second == nil || second == first {
		t.Fatal("the flow after NetworkChanged used the old connection")
	}
	if a, b := first.Sock.LocalAddr().String(), second.Sock.LocalAddr().String(); a == b {
		t.Errorf("the new connection runs on the old socket %s", a)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("the server authenticated %d connections, want 2", n)
	}
	select {
	case <-first.QC.Context().Done():
	case <-time.After(3 * time.Second):
		t.Error("the retired connection is still open 3 s after its replacement came up")
	}
	// Without a live connection NetworkChanged does nothing.
	c2 := newClient(t, testNode(srv.port(), "secret", ""))
	c2.NetworkChanged()
	echoTCP(t, c2, tcpEcho, 1000)
}
