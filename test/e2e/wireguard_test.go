package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/curve25519"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/netstack"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestWireGuard runs skiff's WireGuard outbound against a peer in the
// test process: wireguard-go's device on wireguard-go's own netstack
// (nothing of skiff's), behind a bind of the test's that, as WARP does,
// writes reserved bytes into every message and expects the client's in
// every message it receives. The peer's stack serves the hash TCP server
// and the directional UDP server at 10.77.0.1, reached only through the
// tunnel. 16 MiB each way checked by SHA-256, UDP, and a peer restart.
func TestWireGuard(t *testing.T) {
	clientPriv, clientPub := wgKeyPair(t)
	peerPriv, peerPub := wgKeyPair(t)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := wgPeerConfig{priv: peerPriv, clientPub: clientPub, port: port,
		toClient: [3]byte{9, 8, 7}, fromClient: [3]byte{168, 26, 21}}
	peer := startWGPeer(t, cfg)

	link := fmt.Sprintf("wireguard://%s@127.0.0.1:%d/?publickey=%s&address=10.77.0.2%%2F32&mtu=1420&reserved=168%%2C26%%2C21&keepalive=5&dns=10.77.0.1#wg",
		url.QueryEscape(base64.StdEncoding.EncodeToString(clientPriv[:])), port, url.QueryEscape(base64.StdEncoding.EncodeToString(peerPub[:])))
	_, proxy, err := harness.SkiffRun(t, []string{link})
	if err != nil {
		t.Fatal(err)
	}
	const hashAddr, udpAddr = "10.77.0.1:80", "10.77.0.1:53"

	t.Run("tcp-up-16MiB", func(t *testing.T) { testTCPHash(t, proxy, hashAddr, harness.Upload, 16<<20) })
	t.Run("tcp-down-16MiB", func(t *testing.T) { testTCPHash(t, proxy, hashAddr, harness.Download, 16<<20) })
	t.Run("udp-down", func(t *testing.T) { testUDPSizes(t, proxy, udpAddr, harness.Download, []int{1, 512, 1200, 1300}) })
	t.Run("udp-up", func(t *testing.T) { testUDPSizes(t, proxy, udpAddr, harness.Upload, []int{1, 512, 1200, 1300}) })
	if peer.fromClient.Load() == 0 {
		t.Error("the peer saw no message carrying the client's reserved bytes")
	}
	t.Run("peer-restart", func(t *testing.T) {
		peer.stop()
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

func wgKeyPair(t *testing.T) (priv, pub [32]byte) {
	t.Helper()
	rand.Read(priv[:])
	priv[0] &= 248
	priv[31] = priv[31]&127 | 64
	p, err := curve25519.X25519(priv[:], curve25519.Basepoint)
	if err != nil {
		t.Fatal(err)
	}
	return priv, [32]byte(p)
}

type wgPeerConfig struct {
	priv, clientPub [32]byte
	port            int
	toClient        [3]byte // reserved bytes the peer writes
	fromClient      [3]byte // reserved bytes the peer expects
}

type wgPeer struct {
	dev        *device.Device
	fromClient *atomic.Int64 // messages that arrived with the expected reserved bytes
	wg         sync.WaitGroup
	closers    []func() error
	once       sync.Once
}

func (p *wgPeer) stop() {
	p.once.Do(func() {
		for _, c := range p.closers {
			c()
		}
		p.dev.Close()
		p.wg.Wait()
	})
}

// startWGPeer starts the peer on 127.0.0.1:cfg.port, stopped at cleanup.
func startWGPeer(t *testing.T, cfg wgPeerConfig) *wgPeer {
	t.Helper()
	tn, tnet, err := netstack.CreateNetTUN([]netip.Addr{netip.MustParseAddr("10.77.0.1")}, nil, 1420)
	if err != nil {
		t.Fatal(err)
	}
	p := &wgPeer{fromClient: new(atomic.Int64)}
	bind := &reservedBind{port: cfg.port, send: cfg.toClient, want: cfg.fromClient, seen: p.fromClient}
	p.dev = device.NewDevice(tn, bind, device.NewLogger(device.LogLevelSilent, ""))
	uapi := fmt.Sprintf("private_key=%s\nlisten_port=%d\npublic_key=%s\nallowed_ip=10.77.0.2/32\n",
		hex.EncodeToString(cfg.priv[:]), cfg.port, hex.EncodeToString(cfg.clientPub[:]))
	if err := p.dev.IpcSet(uapi); err != nil {
		t.Fatal(err)
	}
	if err := p.dev.Up(); err != nil {
		t.Fatal(err)
	}
	ln, err := tnet.ListenTCP(&net.TCPAddr{IP: net.IPv4(10, 77, 0, 1), Port: 80})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := tnet.ListenUDP(&net.UDPAddr{IP: net.IPv4(10, 77, 0, 1), Port: 53})
	if err != nil {
		t.Fatal(err)
	}
	p.closers = append(p.closers, ln.Close, pc.Close)
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); hashConn(c); c.Close() }()
		}
	}()
	go func() { defer p.wg.Done(); harness.ServeDirectionalUDP(pc) }()
	t.Cleanup(p.stop)
	return p
}

// reservedBind is a conn.Bind on one UDP socket that writes send into
// bytes 1..3 of every message and counts received messages whose bytes
// 1..3 are want before clearing them (stock wireguard-go drops a message
// with those bytes set).
type reservedBind struct {
	port int
	send [3]byte
	want [3]byte
	seen *atomic.Int64

	mu sync.Mutex
	uc *net.UDPConn
}

func (b *reservedBind) Open(uint16) ([]conn.ReceiveFunc, uint16, error) {
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: b.port})
	if err != nil {
		return nil, 0, err
	}
	b.mu.Lock()
	b.uc = uc
	b.mu.Unlock()
	recv := func(packets [][]byte, sizes []int, eps []conn.Endpoint) (int, error) {
		n, ap, err := uc.ReadFromUDPAddrPort(packets[0])
		if err != nil {
			return 0, err
		}
		if n >= 4 {
			if [3]byte(packets[0][1:4]) == b.want {
				b.seen.Add(1)
			}
			clear(packets[0][1:4])
		}
		sizes[0], eps[0] = n, &conn.StdNetEndpoint{AddrPort: ap}
		return 1, nil
	}
	return []conn.ReceiveFunc{recv}, uint16(b.port), nil
}

func (b *reservedBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.uc == nil {
		return nil
	}
	err := b.uc.Close()
	b.uc = nil
	return err
}

func (b *reservedBind) Send(bufs [][]byte, ep conn.Endpoint) error {
	b.mu.Lock()
	uc := b.uc
	b.mu.Unlock()
	if uc == nil {
		return net.ErrClosed
	}
	dst := ep.(*conn.StdNetEndpoint).AddrPort
	for _, buf := range bufs {
		if len(buf) >= 4 {
			copy(buf[1:4], b.send[:])
		}
		if _, err := uc.WriteToUDPAddrPort(buf, dst); err != nil {
			return err
		}
	}
	return nil
}

func (b *reservedBind) ParseEndpoint(s string) (conn.Endpoint, error) {
	ap, err := netip.ParseAddrPort(s)
	return &conn.StdNetEndpoint{AddrPort: ap}, err
}

func (b *reservedBind) SetMark(uint32) error { return nil }
func (b *reservedBind) BatchSize() int       { return 1 }
