package hysteria2

import (
	"context"
	"net"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/xorobfs"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestSalamanderOffload relays through a Client and the test server, both
// obfuscating with the batching conn, and checks that each end received
// the other's packets coalesced: loopback has no GRO of its own, so both
// ends sent with GSO through Salamander and read through receive offload.
func TestSalamanderOffload(t *testing.T) {
	srv := newTestServer(t, "secret", "obfs-password", false)
	c := newClient(t, testNode(srv.port(), "secret", "obfs-password"))
	echoTCP(t, c, flow.AddrFromAddrPort(nettest.TCPEcho(t)), 4<<20)
	q, err := c.conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	srvConn := srv.tr.Conn
	srv.mu.Unlock()
	for _, end := range []struct {
		name string
		pc   net.PacketConn
	}{{"client", q.Tr.Conn}, {"server", srvConn}} {
		g, batched := xorobfs.Offload(end.pc)
		if !batched {
			t.Fatalf("%s: quic-go runs on a %T", end.name, end.pc)
		}
		if g == nil {
			t.Skip("no receive offload here")
		}
		st := g.Stats()
		t.Logf("%s: %d reads, %d datagrams, %d packets", end.name, st.Reads, st.Datagrams, st.Segments)
		if st.Segments < 2*st.Datagrams {
			t.Errorf("%s: %d packets in %d datagrams: the other end did not send with GSO", end.name, st.Segments, st.Datagrams)
		}
	}
}
