package netstack

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/tun/netstack"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// The app side of these tests is a second, independent TCP/IP stack
// (wireguard's netstack) whose packets are carried to and from our Stack
// over a channel device: real TCP handshakes, real datagrams, no root.

var (
	appAddr4 = netip.MustParseAddr("172.19.0.1")
	appAddr6 = netip.MustParseAddr("fdfe:dcba:9876::1")
	// Destinations the app dials: nothing is there; the handler decides.
	remote4 = netip.MustParseAddr("198.18.0.9")
	remote6 = netip.MustParseAddr("2001:db8::9")
)

// testHandler connects TCP flows to a real loopback server and answers UDP
// itself. delay holds the upstream "dial"; refuse fails it.
type testHandler struct {
	upstream string // loopback echo server
	delay    time.Duration
	refuse   bool
	accepted atomic.Int64
	metas    chan flow.Metadata
}

func (h *testHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	select {
	case h.metas <- m:
	default:
	}
	time.Sleep(h.delay)
	if h.refuse {
		return errors.New("upstream unreachable")
	}
	up, err := net.Dial("tcp", h.upstream)
	if err != nil {
		return err
	}
	defer up.Close()
	app, err := accept()
	if err != nil {
		return err
	}
	h.accepted.Add(1)
	defer app.Close()
	go func() { io.Copy(up, app); up.Close() }()
	io.Copy(app, up)
	return nil
}

// HandlePacket echoes each datagram from its destination and once more from
// another address (as a full-cone server's second address would).
func (h *testHandler) HandlePacket(ctx context.Context, m flow.Metadata, conn net.PacketConn) error {
	defer conn.Close()
	select {
	case h.metas <- m:
	default:
	}
	buf := make([]byte, 65535)
	for {
		n, dst, err := conn.ReadFrom(buf)
		if err != nil {
			return nil
		}
		if _, err := conn.WriteTo(buf[:n], dst); err != nil {
			return err
		}
		other := flow.Addr{IP: m.Destination.IP.Next(), Port: 5353}
		if _, err := conn.WriteTo(buf[:n], other); err != nil {
			return err
		}
	}
}

func newTestStack(t *testing.T, h *testHandler, opts Options) *netstack.Net {
	t.Helper()
	h.upstream = nettest.TCPEcho(t).String()
	h.metas = make(chan flow.Metadata, 16)
	return newStackWith(t, h, opts)
}

// newStackWith is newTestStack with any handler.
func newStackWith(t *testing.T, h flow.Handler, opts Options) *netstack.Net {
	t.Helper()
	ch := tuntest.NewChannelTUN()
	s, err := New(ch.TUN(), h, opts)
	if err != nil {
		t.Fatal(err)
	}
	appDev, appNet, err := netstack.CreateNetTUN([]netip.Addr{appAddr4, appAddr6}, nil, 1420)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // app → our stack
		bufs, sizes := [][]byte{make([]byte, 65535)}, []int{0}
		for {
			n, err := appDev.Read(bufs, sizes, 0)
			if err != nil {
				return
			}
			for i := 0; i < n; i++ {
				p := append([]byte(nil), bufs[i][:sizes[i]]...)
				select {
				case ch.Outbound <- p:
				case <-done: // our stack is gone: keep draining the app's
				}
			}
		}
	}()
	go func() { // our stack → app
		for p := range ch.Inbound {
			appDev.Write([][]byte{p}, 0)
		}
	}()
	t.Cleanup(func() {
		close(done)
		s.Close()
		appDev.Close()
	})
	_ = s
	return appNet
}

func TestTCPAcceptAfterUpstream(t *testing.T) {
	for _, dst := range []netip.Addr{remote4, remote6} {
		t.Run(dst.String(), func(t *testing.T) {
			h := &testHandler{delay: 300 * time.Millisecond}
			app := newTestStack(t, h, Options{})
			start := time.Now()
			c, err := app.DialContextTCPAddrPort(context.Background(), netip.AddrPortFrom(dst, 443))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if el := time.Since(start); el < h.delay {
				t.Errorf("connected after %s, before the upstream (%s): the app saw an answer too early", el, h.delay)
			}
			m := <-h.metas
			if m.Network != flow.TCP || m.Destination.AddrPort() != netip.AddrPortFrom(dst, 443) || m.Inbound != "tun" || !m.Source.IsValid() {
				t.Errorf("metadata %+v", m)
			}
			msg := []byte("through the netstack")
			c.Write(msg)
			got := make([]byte, len(msg))
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, got); err != nil || string(got) != string(msg) {
				t.Fatalf("echo: %q %v", got, err)
			}
		})
	}
}

func TestTCPRefusedWhenNoUpstream(t *testing.T) {
	h := &testHandler{refuse: true}
	app := newTestStack(t, h, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := app.DialContextTCPAddrPort(ctx, netip.AddrPortFrom(remote4, 443))
	if err == nil {
		t.Fatal("connected although the handler found no upstream")
	}
	if ctx.Err() != nil {
		t.Fatalf("no RST: the dial hung until the deadline (%v)", err)
	}
	if h.accepted.Load() != 0 {
		t.Fatal("accepted")
	}
}

func TestUDPSessionFullCone(t *testing.T) {
	for _, tc := range []struct{ src, dst netip.Addr }{{appAddr4, remote4}, {appAddr6, remote6}} {
		t.Run(tc.dst.String(), func(t *testing.T) {
			h := &testHandler{}
			app := newTestStack(t, h, Options{UDPTimeout: time.Second})
			c, err := app.ListenUDPAddrPort(netip.AddrPortFrom(tc.src, 40000))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			dst := netip.AddrPortFrom(tc.dst, 53)
			if _, err := c.WriteTo([]byte("query"), net.UDPAddrFromAddrPort(dst)); err != nil {
				t.Fatal(err)
			}
			froms := map[netip.AddrPort]bool{}
			buf := make([]byte, 2048)
			for len(froms) < 2 {
				c.SetReadDeadline(time.Now().Add(3 * time.Second))
				n, from, err := c.ReadFrom(buf)
				if err != nil {
					t.Fatalf("replies so far %v: %v", froms, err)
				}
				if string(buf[:n]) != "query" {
					t.Fatalf("reply %q", buf[:n])
				}
				ap := from.(*net.UDPAddr).AddrPort()
				froms[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
			}
			other := netip.AddrPortFrom(tc.dst.Next(), 5353)
			if !froms[dst] || !froms[other] {
				t.Errorf("replies came from %v, want %s and %s", froms, dst, other)
			}
			m := <-h.metas
			if m.Network != flow.UDP || m.Destination.AddrPort() != dst || m.Source != netip.AddrPortFrom(tc.src, 40000) {
				t.Errorf("metadata %+v", m)
			}
		})
	}
}

func TestUDPIdleTimeout(t *testing.T) {
	h := &testHandler{}
	app := newTestStack(t, h, Options{UDPTimeout: 300 * time.Millisecond})
	c, err := app.DialUDPAddrPort(netip.AddrPortFrom(appAddr4, 40001), netip.AddrPortFrom(remote4, 9))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 16)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	<-h.metas
	// The stack's table is reachable through the handler's Stack only;
	// find it via a fresh session after the time-out instead: a new
	// session means a new HandlePacket call.
	time.Sleep(time.Second)
	c.Write([]byte("y"))
	select {
	case <-h.metas:
	case <-time.After(3 * time.Second):
		t.Fatal("no new session after the idle time-out: the old one was not closed")
	}
}

func TestICMPEchoDoesNotHang(t *testing.T) {
	h := &testHandler{}
	app := newTestStack(t, h, Options{})
	for _, dst := range []netip.Addr{remote4, remote6} {
		src := appAddr4
		if dst.Is6() {
			src = appAddr6
		}
		pc, err := app.DialPingAddr(src, dst)
		if err != nil {
			t.Fatal(err)
		}
		echo := []byte{8, 0, 0, 0, 0, 1, 0, 1, 'p', 'i', 'n', 'g'}
		if dst.Is6() {
			echo[0] = 128
		}
		// wireguard's PingConn only waits for a wake-up, so a reply that
		// comes before its Read starts is missed: read first, then send.
		buf := make([]byte, 1500)
		type result struct {
			n   int
			err error
		}
		got := make(chan result, 1)
		pc.SetReadDeadline(time.Now().Add(2 * time.Second))
		go func() { n, err := pc.Read(buf); got <- result{n, err} }()
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		if _, err := pc.Write(echo); err != nil {
			t.Fatal(err)
		}
		r := <-got
		n, err := r.n, r.err
		if err != nil {
			t.Fatalf("ping %s: no echo reply within 2s: %v", dst, err)
		}
		if buf[0] != 0 && buf[0] != 129 {
			t.Errorf("ping %s: reply type %d", dst, buf[0])
		}
		// The sequence number and payload come back (the ping socket puts
		// its own identifier in).
		if n != len(echo) || string(buf[6:n]) != string(echo[6:]) {
			t.Errorf("ping %s: reply % x does not echo the request % x", dst, buf[:n], echo)
		}
		t.Logf("ping %s answered locally in %s (%d bytes)", dst, time.Since(start), n)
		pc.Close()
	}
}
