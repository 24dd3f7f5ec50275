package harness

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

	"golang.org/x/crypto/curve25519"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/netstack"
)

// WireGuard test peer: wireguard-go's device on wireguard-go's own netstack
// (nothing of skiff's) at 10.77.0.1, whose servers are reached only through
// the tunnel, behind a bind that, as Cloudflare WARP does, writes reserved
// bytes into every message and expects the client's in every message.

// WireGuardPeerIP is the peer's address inside the tunnel; the client is
// WireGuardClientIP.
const (
	WireGuardPeerIP   = "10.77.0.1"
	WireGuardClientIP = "10.77.0.2"
)

// WireGuardKeyPair returns a new Curve25519 key pair.
func WireGuardKeyPair() (priv, pub [32]byte, err error) {
	rand.Read(priv[:])
	priv[0] &= 248
	priv[31] = priv[31]&127 | 64
	p, err := curve25519.X25519(priv[:], curve25519.Basepoint)
	if err != nil {
		return priv, pub, err
	}
	return priv, [32]byte(p), nil
}

// WireGuardPeerConfig is a peer's settings.
type WireGuardPeerConfig struct {
	Priv, ClientPub [32]byte
	Port            int                          // UDP port on 127.0.0.1
	ToClient        [3]byte                      // reserved bytes the peer writes
	FromClient      [3]byte                      // reserved bytes the peer expects (counted in FromClient)
	TCP             map[int]func(net.Conn)       // TCP servers on the peer's stack by port; the conn is closed after
	UDP             map[int]func(net.PacketConn) // UDP servers by port, returning when the conn closes
}

// WireGuardPeer is a running peer.
type WireGuardPeer struct {
	dev        *device.Device
	FromClient *atomic.Int64 // messages that arrived with the expected reserved bytes
	wg         sync.WaitGroup
	closers    []func() error
	once       sync.Once
}

// Stop stops the peer and waits for its servers.
func (p *WireGuardPeer) Stop() {
	p.once.Do(func() {
		for _, c := range p.closers {
			c()
		}
		p.dev.Close()
		p.wg.Wait()
	})
}

// StartWireGuardPeer starts a peer on 127.0.0.1:cfg.Port.
func StartWireGuardPeer(cfg WireGuardPeerConfig) (*WireGuardPeer, error) {
	tn, tnet, err := netstack.CreateNetTUN([]netip.Addr{netip.MustParseAddr(WireGuardPeerIP)}, nil, 1420)
	if err != nil {
		return nil, err
	}
	p := &WireGuardPeer{FromClient: new(atomic.Int64)}
	bind := &reservedBind{port: cfg.Port, send: cfg.ToClient, want: cfg.FromClient, seen: p.FromClient}
	p.dev = device.NewDevice(tn, bind, device.NewLogger(device.LogLevelSilent, ""))
	uapi := fmt.Sprintf("private_key=%s\nlisten_port=%d\npublic_key=%s\nallowed_ip=%s/32\n",
		hex.EncodeToString(cfg.Priv[:]), cfg.Port, hex.EncodeToString(cfg.ClientPub[:]), WireGuardClientIP)
	if err := p.dev.IpcSet(uapi); err != nil {
		p.dev.Close()
		return nil, err
	}
	if err := p.dev.Up(); err != nil {
		p.dev.Close()
		return nil, err
	}
	ip := net.ParseIP(WireGuardPeerIP)
	for port, handle := range cfg.TCP {
		ln, err := tnet.ListenTCP(&net.TCPAddr{IP: ip, Port: port})
		if err != nil {
			p.Stop()
			return nil, err
		}
		p.closers = append(p.closers, ln.Close)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				p.wg.Add(1)
				go func() { defer p.wg.Done(); handle(c); c.Close() }()
			}
		}()
	}
	for port, handle := range cfg.UDP {
		pc, err := tnet.ListenUDP(&net.UDPAddr{IP: ip, Port: port})
		if err != nil {
			p.Stop()
			return nil, err
		}
		p.closers = append(p.closers, pc.Close)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); handle(pc) }()
	}
	return p, nil
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

// WireGuardLink is the share link of cfg's peer for the client whose
// private key is clientPriv, with the reserved bytes the peer expects.
func WireGuardLink(cfg WireGuardPeerConfig, clientPriv, peerPub [32]byte) string {
	r := cfg.FromClient
	return fmt.Sprintf("wireguard://%s@127.0.0.1:%d/?publickey=%s&address=%s%%2F32&mtu=1420&reserved=%d%%2C%d%%2C%d&keepalive=5&dns=%s#wg",
		url.QueryEscape(base64.StdEncoding.EncodeToString(clientPriv[:])), cfg.Port, url.QueryEscape(base64.StdEncoding.EncodeToString(peerPub[:])),
		WireGuardClientIP, r[0], r[1], r[2], WireGuardPeerIP)
}
