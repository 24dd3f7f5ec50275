package hysteria2

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// udpRelay forwards UDP between clients and a server, one upstream socket
// per client address, like the DNAT rule in front of a hopping server: the
// server sees a new address whenever the client's port or the relay
// changes. It counts the packets clients sent to it.
type udpRelay struct {
	ln      *net.UDPConn
	server  *net.UDPAddr
	packets atomic.Int64

	mu   sync.Mutex
	ups  map[netip.AddrPort]*net.UDPConn
	wg   sync.WaitGroup
	done bool
}

func newUDPRelay(t *testing.T, server uint16) *udpRelay {
	t.Helper()
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &udpRelay{ln: ln, server: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(server)}, ups: map[netip.AddrPort]*net.UDPConn{}}
	r.wg.Add(1)
	go r.serve()
	t.Cleanup(r.close)
	return r
}

func (r *udpRelay) port() uint16 { return uint16(r.ln.LocalAddr().(*net.UDPAddr).Port) }

func (r *udpRelay) serve() {
	defer r.wg.Done()
	buf := make([]byte, quicconn.MaxUDPPacket)
	for {
		n, from, err := r.ln.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		r.packets.Add(1)
		r.mu.Lock()
		up := r.ups[from]
		if up == nil && !r.done {
			if up, err = net.DialUDP("udp", nil, r.server); err != nil {
				r.mu.Unlock()
				continue
			}
			r.ups[from] = up
			r.wg.Add(1)
			go r.back(up, from)
		}
		r.mu.Unlock()
		if up != nil {
			up.Write(buf[:n])
		}
	}
}

// back relays the server's answers to the client at to.
func (r *udpRelay) back(up *net.UDPConn, to netip.AddrPort) {
	defer r.wg.Done()
	buf := make([]byte, quicconn.MaxUDPPacket)
	for {
		n, err := up.Read(buf)
		if err != nil {
			return
		}
		r.ln.WriteToUDPAddrPort(buf[:n], to)
	}
}

func (r *udpRelay) close() {
	r.mu.Lock()
	r.done = true
	r.ln.Close()
	for _, up := range r.ups {
		up.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// TestClientHopsOpenStream keeps one TCP stream busy while the connection
// hops every 150 ms between three ports, and checks that the stream stays
// intact, that several ports carried it and that it stayed one connection.
func TestClientHopsOpenStream(t *testing.T) {
	for _, obfs := range []string{"", "hop-obfs"} {
		t.Run("obfs="+obfs, func(t *testing.T) {
			srv := newTestServer(t, "secret", obfs, false)
			relays := []*udpRelay{newUDPRelay(t, srv.port()), newUDPRelay(t, srv.port()), newUDPRelay(t, srv.port())}
			var ports []string
			for _, r := range relays {
				ports = append(ports, itoa(r.port()))
			}
			n := testNode(0, "secret", obfs)
			n.Hysteria2.Ports = strings.Join(ports, ",")
			c := newClient(t, n)
			c.hopEvery = 150 * time.Millisecond // below MinHopInterval, for the test only

			echo := flow.AddrFromAddrPort(nettest.TCPEcho(t))
			conn, err := c.DialContext(ctxT(t, 10*time.Second), "tcp", echo)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			chunk := make([]byte, 32<<10)
			got := make([]byte, len(chunk))
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
				rand.Read(chunk)
				conn.SetDeadline(time.Now().Add(20 * time.Second)) // generous: CI shares two cores among test packages
				if _, err := conn.Write(chunk); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(conn, got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, chunk) {
					t.Fatal("echo differs")
				}
			}
			used := 0
			for _, r := range relays {
				if r.packets.Load() > 0 {
					used++
				}
			}
			if used < 2 {
				t.Errorf("%d of 3 ports carried packets, want at least 2", used)
			}
			if a := srv.accepted.Load(); a != 1 {
				t.Errorf("server accepted %d connections, want 1 (the stream must not reconnect)", a)
			}
			// Close waits for the hop loop and the sockets' readers.
			closed := make(chan struct{})
			go func() { c.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return: a hop goroutine is stuck")
			}
		})
	}
}

// TestSinglePortDoesNotHop checks that a single-port node keeps the plain
// socket path.
func TestSinglePortDoesNotHop(t *testing.T) {
	srv := newTestServer(t, "secret", "", false)
	c := newClient(t, testNode(srv.port(), "secret", ""))
	q, err := c.conn(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if q.hop != nil {
		t.Fatal("single-port connection has a hopping socket")
	}
	if _, ok := q.Sock.(*net.UDPConn); !ok {
		t.Fatalf("socket is %T, want *net.UDPConn", q.Sock)
	}
}

func TestHopInterval(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, DefaultHopInterval},
		{time.Second, MinHopInterval},
		{MinHopInterval, MinHopInterval},
		{10 * time.Second, 10 * time.Second},
		{2 * time.Minute, 2 * time.Minute},
	} {
		if got := hopInterval(tc.in); got != tc.want {
			t.Errorf("hopInterval(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestHopConn checks the socket swap on its own: each hop sends from a new
// local port to another server port, the socket before the previous one
// is closed, answers to the previous socket are still read, and Close and
// the read deadline end a blocked read.
func TestHopConn(t *testing.T) {
	var servers []*net.UDPConn
	var ports []string
	for range 2 {
		s, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		servers = append(servers, s)
		ports = append(ports, itoa(uint16(s.LocalAddr().(*net.UDPAddr).Port)))
	}
	set, err := parsePorts(strings.Join(ports, ","))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var socks []net.PacketConn
	open := func(ctx context.Context) (net.PacketConn, error) {
		s, err := net.ListenPacket("udp", "127.0.0.1:0")
		mu.Lock()
		socks = append(socks, s)
		mu.Unlock()
		return s, err
	}
	remote := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	h, err := newHopConn(context.Background(), open, netip.MustParseAddr("127.0.0.1"), set, remote)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	// send writes a packet and returns the server that got it and the
	// client address it came from.
	send := func() (*net.UDPConn, net.Addr) {
		t.Helper()
		if _, err := h.WriteTo([]byte("ping"), remote); err != nil {
			t.Fatal(err)
		}
		srv := servers[0]
		if uint16(srv.LocalAddr().(*net.UDPAddr).Port) != h.port() {
			srv = servers[1]
		}
		srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 16)
		n, from, err := srv.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("server read %q, %v", buf[:n], err)
		}
		return srv, from
	}
	read := func(want string) {
		t.Helper()
		h.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 16)
		n, from, err := h.ReadFrom(buf)
		if err != nil || string(buf[:n]) != want || from != remote {
			t.Fatalf("read %q from %v, %v; want %q from %v", buf[:n], from, err, want, remote)
		}
	}

	srv0, from0 := send()
	if err := h.hop(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv1, from1 := send()
	if srv1 == srv0 {
		t.Error("hop kept the server port")
	}
	if from1.String() == from0.String() {
		t.Error("hop kept the local socket")
	}
	// The previous socket still receives.
	srv0.WriteTo([]byte("late"), from0)
	read("late")
	srv1.WriteTo([]byte("new"), from1)
	read("new")

	if err := h.hop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	first := socks[0]
	mu.Unlock()
	if _, err := first.WriteTo([]byte("x"), srv0.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("socket of two hops ago: write error %v, want it closed", err)
	}

	h.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, _, err := h.ReadFrom(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v", err)
	}
	h.SetReadDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() { _, _, err := h.ReadFrom(make([]byte, 16)); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	h.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v", err)
	}
	if err := h.hop(context.Background()); !errors.Is(err, errHopClosed) {
		t.Errorf("hop after Close: %v", err)
	}
}

// BenchmarkStreamEcho compares a stream's echo throughput on the plain
// socket of a single-port node with that on the hopping socket of a
// multi-port one (its port listed twice, so both reach the one test
// server; no hop happens within the default interval).
func BenchmarkStreamEcho(b *testing.B) {
	for _, tc := range []struct{ name, ports string }{{"one-port", ""}, {"hopping", "twice"}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := newTestServer(b, "secret", "", false)
			n := testNode(srv.port(), "secret", "")
			if tc.ports != "" {
				n.Port, n.Hysteria2.Ports = 0, itoa(srv.port())+","+itoa(srv.port())
			}
			c, err := New(n, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			conn, err := c.DialContext(context.Background(), "tcp", flow.AddrFromAddrPort(nettest.TCPEcho(b)))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			buf := make([]byte, 1<<20)
			got := make([]byte, len(buf))
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for range b.N {
				errc := make(chan error, 1)
				go func() { _, err := conn.Write(buf); errc <- err }()
				if _, err := io.ReadFull(conn, got); err != nil {
					b.Fatal(err)
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
