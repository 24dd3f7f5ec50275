package wireguard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/net/dns/dnsmessage"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/internal/nettest"
)

func keyPair(t testing.TB) (priv, pub [32]byte) {
	t.Helper()
	if _, err := rand.Read(priv[:]); err != nil {
		t.Fatal(err)
	}
	priv[0] &= 248
	priv[31] = priv[31]&127 | 64
	p, err := curve25519.X25519(priv[:], curve25519.Basepoint)
	if err != nil {
		t.Fatal(err)
	}
	copy(pub[:], p)
	return priv, pub
}

// testPeer is a WireGuard peer in the test process: wireguard-go's device
// on a netstack of its own (10.9.0.1, fd00:9::1), with an echo server on
// TCP and UDP port 7.
type testPeer struct {
	dev       wgDevice
	tun       *netTUN
	port      uint16
	pub       [32]byte
	priv      [32]byte
	clientPub [32]byte
	seen      atomic.Int64 // datagrams received with the reserved bytes expected
}

// recordingBind wraps a conn.Bind and counts received messages whose
// bytes 1..3 are want, before the inner bind's receive function is seen
// by the device.
type recordingBind struct {
	conn.Bind
	want [3]byte
	seen *atomic.Int64
}

func (b *recordingBind) Open(port uint16) ([]conn.ReceiveFunc, uint16, error) {
	fns, p, err := b.Bind.Open(port)
	for i, fn := range fns {
		fns[i] = func(packets [][]byte, sizes []int, eps []conn.Endpoint) (int, error) {
			n, err := fn(packets, sizes, eps)
			for j := 0; j < n; j++ {
				if sizes[j] >= 4 && [3]byte(packets[j][1:4]) == b.want {
					b.seen.Add(1)
				}
			}
			return n, err
		}
	}
	return fns, p, err
}

// rawBind is a stock-behaving bind on a UDP socket: it leaves reserved
// bytes as they came, like wireguard-go's StdNetBind.
type rawBind struct{ *Bind }

func (b rawBind) Open(port uint16) ([]conn.ReceiveFunc, uint16, error) {
	fns, p, err := b.Bind.Open(port)
	if err != nil {
		return nil, 0, err
	}
	pc := b.Bind.pc.(*net.UDPConn)
	fns[0] = func(packets [][]byte, sizes []int, eps []conn.Endpoint) (int, error) {
		n, ap, err := pc.ReadFromUDPAddrPort(packets[0])
		if err != nil {
			return 0, err
		}
		sizes[0], eps[0] = n, endpoint(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		return 1, nil
	}
	return fns, p, err
}

// clearingBind clears bytes 1..3 of what it receives, as Bind does.
type clearingBind struct{ conn.Bind }

func (b clearingBind) Open(port uint16) ([]conn.ReceiveFunc, uint16, error) {
	fns, p, err := b.Bind.Open(port)
	for i, fn := range fns {
		fns[i] = func(packets [][]byte, sizes []int, eps []conn.Endpoint) (int, error) {
			n, err := fn(packets, sizes, eps)
			for j := 0; j < n; j++ {
				if sizes[j] >= 4 {
					clear(packets[j][1:4])
				}
			}
			return n, err
		}
	}
	return fns, p, err
}

type peerOpts struct {
	clientPub    [32]byte
	psk          [32]byte
	reserved     [3]byte  // sent to the client
	wantReserved [3]byte  // expected from the client (counted in seen)
	stock        bool     // a peer that does not clear reserved bytes
	port         uint16   // 0: any
	priv         [32]byte // zero: a new key
	amnezia      string   // AmneziaWG UAPI lines: an amneziawg-go peer
}

func startPeer(t testing.TB, o peerOpts) *testPeer {
	t.Helper()
	priv, pub := o.priv, [32]byte{}
	if priv == ([32]byte{}) {
		priv, pub = keyPair(t)
	} else {
		pk, _ := curve25519.X25519(priv[:], curve25519.Basepoint)
		pub = [32]byte(pk)
	}
	p := &testPeer{pub: pub, priv: priv, clientPub: o.clientPub}
	tn, err := newNetTUN([]netip.Prefix{netip.MustParsePrefix("10.9.0.1/32"), netip.MustParsePrefix("fd00:9::1/128")}, 1420)
	if err != nil {
		t.Fatal(err)
	}
	inner := NewBind(&outbound.SystemDialer{})
	var b conn.Bind = &recordingBind{Bind: rawBind{inner}, want: o.wantReserved, seen: &p.seen}
	if !o.stock {
		b = clearingBind{b}
	}
	if o.amnezia != "" {
		inner.raw = true
		p.dev = newAmneziaDevice(tn, inner)
	} else {
		p.dev = device.NewDevice(tn, b, &device.Logger{Verbosef: device.DiscardLogf, Errorf: device.DiscardLogf})
	}
	p.tun = tn
	cfg := fmt.Sprintf("private_key=%s\nlisten_port=%d\n"+o.amnezia+"public_key=%s\nallowed_ip=10.9.0.2/32\nallowed_ip=fd00:9::2/128\n",
		hex.EncodeToString(priv[:]), o.port, hex.EncodeToString(o.clientPub[:]))
	if o.psk != ([32]byte{}) {
		cfg += "preshared_key=" + hex.EncodeToString(o.psk[:]) + "\n"
	}
	if err := p.dev.IpcSet(cfg); err != nil {
		t.Fatal(err)
	}
	if err := p.dev.Up(); err != nil {
		t.Fatal(err)
	}
	p.port = uint16(inner.pc.LocalAddr().(*net.UDPAddr).Port)
	// The client's endpoint is learnt from its first message; reserved
	// bytes to it are set for any source on loopback by SetReserved once
	// known, so set them for the client's address when it appears.
	if o.reserved != ([3]byte{}) {
		go func() {
			for i := 0; i < 500; i++ {
				s, _ := p.dev.IpcGet()
				for _, line := range strings.Split(s, "\n") {
					if v, ok := strings.CutPrefix(line, "endpoint="); ok {
						inner.SetReserved(netip.MustParseAddrPort(v), o.reserved)
						return
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	for _, a := range []string{"10.9.0.1:7", "[fd00:9::1]:7"} {
		ap := netip.MustParseAddrPort(a)
		fa, proto := fullAddr(ap)
		l, err := gonet.ListenTCP(tn.stack, fa, proto)
		if err != nil {
			t.Fatal(err)
		}
		nettest.Serve(t, l, func(c net.Conn) { io.Copy(c, c) })
		uc, err := gonet.DialUDP(tn.stack, &fa, nil, proto)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 65535)
			for {
				n, from, err := uc.ReadFrom(buf)
				if err != nil {
					return
				}
				uc.WriteTo(buf[:n], from)
			}
		}()
		t.Cleanup(func() { uc.Close(); <-done })
	}
	t.Cleanup(p.dev.Close)
	return p
}

func b64(k [32]byte) string { return base64.StdEncoding.EncodeToString(k[:]) }

func clientNode(priv [32]byte, p *testPeer, reserved [3]byte) *node.Node {
	return &node.Node{Name: "wg", Protocol: node.WireGuard, Server: "127.0.0.1", Port: p.port, WireGuard: &node.WireGuardOptions{
		PrivateKey: b64(priv),
		Addresses:  []string{"10.9.0.2/32", "fd00:9::2/128"},
		MTU:        1420,
		DNS:        []string{"10.9.0.1"},
		Peers:      []node.WireGuardPeer{{PublicKey: b64(p.pub), Reserved: reserved}},
	}}
}

// setup starts a peer with o (its clientPub filled in) and a Client of
// it, closed at cleanup, and a context for the test's dials.
func setup(t *testing.T, o peerOpts, edit func(*node.Node)) (*Client, *testPeer, context.Context) {
	t.Helper()
	priv, pub := keyPair(t)
	o.clientPub = pub
	p := startPeer(t, o)
	n := clientNode(priv, p, o.wantReserved)
	if edit != nil {
		edit(n)
	}
	c, err := New(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c, p, ctx
}

var echoAddr = netip.MustParseAddrPort("10.9.0.1:7")

func TestTCPAndUDPThroughPeer(t *testing.T) {
	for _, tt := range []struct {
		name     string
		reserved [3]byte
		psk      bool
	}{
		{"plain", [3]byte{}, false},
		{"reserved", [3]byte{168, 26, 21}, false},
		{"preshared key", [3]byte{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var psk [32]byte
			if tt.psk {
				psk, _ = keyPair(t)
			}
			c, p, ctx := setup(t, peerOpts{psk: psk, reserved: [3]byte{9, 8, 7}, wantReserved: tt.reserved}, func(n *node.Node) {
				if tt.psk {
					n.WireGuard.Peers[0].PresharedKey = b64(psk)
				}
			})
			for _, dst := range []string{"10.9.0.1:7", "[fd00:9::1]:7"} {
				a, _ := flow.ParseAddr(dst)
				echoTCP(t, ctx, c, a, 1<<20)
				echoUDP(t, ctx, c, a)
			}
			if tt.reserved != ([3]byte{}) && p.seen.Load() == 0 {
				t.Errorf("peer saw no message with reserved bytes %v", tt.reserved)
			}
		})
	}
}

func echoTCP(t *testing.T, ctx context.Context, c *Client, dst flow.Addr, size int) {
	t.Helper()
	conn, err := c.DialContext(ctx, "tcp", dst)
	if err != nil {
		t.Fatalf("dial %s: %v", dst, err)
	}
	defer conn.Close()
	data := make([]byte, size)
	rand.Read(data)
	go func() { conn.Write(data) }()
	got := make([]byte, size)
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("read echo from %s: %v", dst, err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("echo from %s differs", dst)
	}
}

func echoUDP(t *testing.T, ctx context.Context, c *Client, dst flow.Addr) {
	t.Helper()
	pc, err := c.ListenPacket(ctx, dst)
	if err != nil {
		t.Fatalf("listen packet for %s: %v", dst, err)
	}
	defer pc.Close()
	msg := []byte("hello " + dst.String())
	buf := make([]byte, 2048)
	for try := 0; try < 5; try++ {
		if _, err := pc.WriteTo(msg, dst); err != nil {
			t.Fatalf("udp write to %s: %v", dst, err)
		}
		pc.SetReadDeadline(time.Now().Add(time.Second))
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			continue
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("udp echo = %q", buf[:n])
		}
		want := dst.AddrPort()
		if dst.IsName() {
			want = netip.MustParseAddrPort("10.9.0.1:7")
		}
		if fa, ok := from.(flow.Addr); !ok || fa.AddrPort() != want {
			t.Fatalf("udp echo from %v, want %v", from, dst)
		}
		return
	}
	t.Fatalf("no udp echo from %s", dst)
}

// A stock peer (wireguard-go's receive path unchanged) drops messages
// with reserved bytes: this shows that the bytes are on the wire, and
// that without clearing them the peer would not answer.
func TestStockPeerDropsReserved(t *testing.T) {
	c, p, ctx := setup(t, peerOpts{stock: true, wantReserved: [3]byte{1, 2, 3}}, nil)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", flow.AddrFromAddrPort(echoAddr))
	if err == nil {
		conn.Close()
		t.Fatal("dial through a stock peer with reserved bytes succeeded")
	}
	if !strings.Contains(err.Error(), "no handshake") {
		t.Errorf("error %q does not say that no handshake completed", err)
	}
	if p.seen.Load() == 0 {
		t.Error("peer saw no message carrying the reserved bytes")
	}
}

// Names dialled through the outbound are resolved by the node's DNS
// server through the tunnel.
func TestNameResolvedThroughTunnel(t *testing.T) {
	c, p, ctx := setup(t, peerOpts{}, nil)
	// A DNS server on the peer's stack that answers every A query with
	// 10.9.0.1.
	fa, proto := fullAddr(netip.MustParseAddrPort("10.9.0.1:53"))
	dns, err := gonet.DialUDP(p.tun.stack, &fa, nil, proto)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	done := make(chan struct{})
	go func() { defer close(done); serveDNS(dns, &asked) }()
	defer func() { dns.Close(); <-done }()
	echoTCP(t, ctx, c, flow.NameAddr("echo.wg.test", 7), 1000)
	echoUDP(t, ctx, c, flow.NameAddr("echo.wg.test", 7))
	if asked.Load() == 0 {
		t.Fatal("the tunnel's DNS server was not asked")
	}
}

func TestRecoversAfterPeerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for WireGuard's rekey timeout")
	}
	c, p, ctx := setup(t, peerOpts{}, func(n *node.Node) { n.WireGuard.Peers[0].Keepalive = time.Second })
	a := flow.AddrFromAddrPort(echoAddr)
	echoTCP(t, ctx, c, a, 1000)
	p.dev.Close()
	// The same peer, restarted on the same port with the same key, has
	// forgotten the session.
	startPeer(t, peerOpts{clientPub: p.clientPub, port: p.port, priv: p.priv})
	start := time.Now()
	for {
		dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
		conn, err := c.DialContext(dctx, "tcp", a)
		dcancel()
		if err == nil {
			conn.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no connection 60 s after the peer restarted: %v", err)
		}
	}
	t.Logf("reconnected %v after the restart", time.Since(start).Round(time.Second))
	echoTCP(t, ctx, c, a, 1<<20)
}

func TestNetworkChangedKeepsTunnel(t *testing.T) {
	c, _, ctx := setup(t, peerOpts{}, nil)
	conn, err := c.DialContext(ctx, "tcp", flow.AddrFromAddrPort(echoAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := c.bind.pc
	c.NetworkChanged()
	if c.bind.pc == before {
		t.Fatal("NetworkChanged kept the old socket")
	}
	// The open stream goes on over the new socket.
	msg := []byte("after the change")
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("stream after NetworkChanged: %v", err)
	}
}

func TestCloseEndsFlows(t *testing.T) {
	c, _, ctx := setup(t, peerOpts{}, nil)
	a := flow.AddrFromAddrPort(echoAddr)
	conn, err := c.DialContext(ctx, "tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after Close succeeded")
	}
	if _, err := c.DialContext(ctx, "tcp", a); err == nil {
		t.Fatal("dial after Close succeeded")
	}
}

// An AmneziaWG node talks to an amneziawg-go peer with the same junk and
// header settings, and not to a plain WireGuard peer (the message types
// differ).
func TestAmneziaWG(t *testing.T) {
	const uapi = "jc=3\njmin=40\njmax=70\ns1=15\ns2=20\nh1=1234567\nh2=2345678\nh3=3456789\nh4=4567890\n"
	awg := func(n *node.Node) {
		n.WireGuard.Amnezia = &node.AmneziaOptions{JunkCount: 3, JunkMin: 40, JunkMax: 70, S: [4]int{15, 20},
			H: [4]string{"1234567", "2345678", "3456789", "4567890"}}
	}
	c, _, ctx := setup(t, peerOpts{amnezia: uapi}, awg)
	a := flow.AddrFromAddrPort(echoAddr)
	echoTCP(t, ctx, c, a, 1<<20)
	echoUDP(t, ctx, c, a)

	plain, _, ctx := setup(t, peerOpts{}, awg)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if conn, err := plain.DialContext(ctx, "tcp", a); err == nil {
		conn.Close()
		t.Fatal("an AmneziaWG client got through a plain WireGuard peer")
	}
}

func TestNewChecksWithoutOpening(t *testing.T) {
	priv, pub := keyPair(t)
	good := func() *node.Node {
		return &node.Node{Name: "wg", Protocol: node.WireGuard, Server: "engage.cloudflareclient.com", Port: 2408, WireGuard: &node.WireGuardOptions{
			PrivateKey: b64(priv), Addresses: []string{"172.16.0.2/32"}, Peers: []node.WireGuardPeer{{PublicKey: b64(pub)}}}}
	}
	if _, err := New(good(), nil); err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, tt := range []struct {
		name string
		edit func(*node.Node)
		want string
	}{
		{"bad private key", func(n *node.Node) { n.WireGuard.PrivateKey = "short" }, "private-key"},
		{"bad peer key", func(n *node.Node) { n.WireGuard.Peers[0].PublicKey = "" }, "public-key"},
		{"no address", func(n *node.Node) { n.WireGuard.Addresses = nil }, "address"},
		{"amnezia 1.5", func(n *node.Node) {
			n.WireGuard.Amnezia = &node.AmneziaOptions{JunkCount: 4, I: [5]string{"<b 0xf6ab>"}}
		}, "AmneziaWG 1.5"},
		{"amnezia 2 ranges", func(n *node.Node) { n.WireGuard.Amnezia = &node.AmneziaOptions{H: [4]string{"100-200"}} }, "AmneziaWG 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := good()
			tt.edit(n)
			_, err := New(n, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error naming %q", err, tt.want)
			}
			if strings.Contains(err.Error(), b64(priv)) {
				t.Fatal("error holds the private key")
			}
		})
	}
}

// serveDNS answers every A query on c with 10.9.0.1 and every other
// query with no answer.
func serveDNS(c *gonet.UDPConn, asked *atomic.Int64) {
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		var m dnsmessage.Message
		if err := m.Unpack(buf[:n]); err != nil || len(m.Questions) != 1 {
			continue
		}
		asked.Add(1)
		q := m.Questions[0]
		m.Header.Response, m.Header.Authoritative = true, true
		if q.Type == dnsmessage.TypeA {
			m.Answers = []dnsmessage.Resource{{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
				Body:   &dnsmessage.AResource{A: [4]byte{10, 9, 0, 1}},
			}}
		}
		out, err := m.Pack()
		if err != nil {
			continue
		}
		c.WriteTo(out, from)
	}
}
