package e2e

import (
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestWireGuard runs skiff's WireGuard outbound against a peer in the
// test process (harness.StartWireGuardPeer: wireguard-go's device on its
// own netstack, writing and expecting reserved bytes as WARP does). The
// peer's stack serves the hash TCP server
// and the directional UDP server at 10.77.0.1, reached only through the
// tunnel. 16 MiB each way checked by SHA-256, UDP, and a peer restart.
func TestWireGuard(t *testing.T) {
	clientPriv, clientPub, err := harness.WireGuardKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	peerPriv, peerPub, err := harness.WireGuardKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := harness.WireGuardPeerConfig{Priv: peerPriv, ClientPub: clientPub, Port: port,
		ToClient: [3]byte{9, 8, 7}, FromClient: [3]byte{168, 26, 21},
		TCP: map[int]func(net.Conn){80: hashConn}, UDP: map[int]func(net.PacketConn){53: harness.ServeDirectionalUDP}}
	peer := startWGPeer(t, cfg)

	link := harness.WireGuardLink(cfg, clientPriv, peerPub)
	_, proxy, err := harness.SkiffRun(t, []string{link})
	if err != nil {
		t.Fatal(err)
	}
	const hashAddr, udpAddr = "10.77.0.1:80", "10.77.0.1:53"

	t.Run("tcp-up-16MiB", func(t *testing.T) { testTCPHash(t, proxy, hashAddr, harness.Upload, 16<<20) })
	t.Run("tcp-down-16MiB", func(t *testing.T) { testTCPHash(t, proxy, hashAddr, harness.Download, 16<<20) })
	t.Run("udp-down", func(t *testing.T) { testUDPSizes(t, proxy, udpAddr, harness.Download, []int{1, 512, 1200, 1300}) })
	t.Run("udp-up", func(t *testing.T) { testUDPSizes(t, proxy, udpAddr, harness.Upload, []int{1, 512, 1200, 1300}) })
	if peer.FromClient.Load() == 0 {
		t.Error("the peer saw no message carrying the client's reserved bytes")
	}
	t.Run("peer-restart", func(t *testing.T) {
		peer.Stop()
		peer = startWGPeer(t, cfg)
		// The restarted peer has no session: skiff's next data goes
		// unanswered until wireguard-go's rekey timer (5 s keepalive +
		// 10 s) starts a new handshake.
		start := time.Now()
		deadline := start.Add(45 * time.Second)
		for {
			err := tryTCPHash(proxy, hashAddr, harness.Download, 256<<10)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no TCP through the restarted peer in 45 s: %v", err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("traffic again %v after the restart", time.Since(start).Round(100*time.Millisecond))
		testTCPHash(t, proxy, hashAddr, harness.Download, 4<<20)
		testUDPSizes(t, proxy, udpAddr, harness.Upload, []int{1200})
	})
}

// startWGPeer is harness.StartWireGuardPeer for t, stopped at cleanup.
func startWGPeer(t *testing.T, cfg harness.WireGuardPeerConfig) *harness.WireGuardPeer {
	t.Helper()
	p, err := harness.StartWireGuardPeer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}
