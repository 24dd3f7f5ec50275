package hysteria2

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
	"github.com/skiffvpn/skiff/core/outbound/internal/xorobfs"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// testServer is a small Hysteria 2 server written from the specification,
// on quic-go and its HTTP/3 server, for the client's tests: it
// authenticates, relays TCP streams to real loopback sockets, and relays
// UDP sessions with fragmentation. (Interop with sing-box's server is
// checked by hand and by the end-to-end tests under test/.)
type testServer struct {
	t        testing.TB
	auth     string
	udp      bool
	obfs     string
	cert     tls.Certificate
	certHash string

	mu    sync.Mutex
	sock  *net.UDPConn
	tr    *quic.Transport
	ln    *quic.Listener
	conns []*quic.Conn
	wg    sync.WaitGroup

	accepted atomic.Int32 // authenticated connections
	lastRx   atomic.Value // Hysteria-CC-RX of the last auth request
}

func newTestServer(t testing.TB, auth, obfs string, udp bool) *testServer {
	return newTestServerOn(t, net.IPv4(127, 0, 0, 1), auth, obfs, udp)
}

func newTestServerOn(t testing.TB, ip net.IP, auth, obfs string, udp bool) *testServer {
	t.Helper()
	s := &testServer{t: t, auth: auth, obfs: obfs, udp: udp}
	s.cert, s.certHash = nettest.SelfSigned(t, "hy2.test")
	sock, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	s.start(sock)
	t.Cleanup(s.stop)
	return s
}

func (s *testServer) port() uint16 { return uint16(s.sock.LocalAddr().(*net.UDPAddr).Port) }

func (s *testServer) start(sock *net.UDPConn) {
	var pc net.PacketConn = sock
	if s.obfs != "" {
		pc = xorobfs.NewConn(sock, xorobfs.Salamander, s.obfs)
	}
	tr := &quic.Transport{Conn: pc}
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{s.cert}, NextProtos: []string{http3.NextProtoH3}},
		&quic.Config{EnableDatagrams: true, MaxIdleTimeout: 30 * time.Second})
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.sock, s.tr, s.ln = sock, tr, ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, qc)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(qc) }()
		}
	}()
}

// stop shuts the server down without telling the clients, like a killed
// process: its socket closes and nothing answers on the port.
func (s *testServer) stop() {
	s.mu.Lock()
	ln, tr, sock, conns := s.ln, s.tr, s.sock, s.conns
	s.conns = nil
	s.mu.Unlock()
	ln.Close()
	tr.Close() // drops the connections without a CONNECTION_CLOSE
	sock.Close()
	for _, qc := range conns {
		<-qc.Context().Done()
	}
	s.wg.Wait()
}

// restart stops the server and starts a new one on the same port; the new
// one knows nothing of the old connections.
func (s *testServer) restart() {
	port := s.port()
	s.stop()
	sock, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)})
	if err != nil {
		s.t.Fatal(err)
	}
	s.start(sock)
}

// closeConns closes every connection with an application error, as a
// server does on shutdown.
func (s *testServer) closeConns() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, qc := range conns {
		qc.CloseWithError(0, "bye")
	}
}

func (s *testServer) serve(qc *quic.Conn) {
	var authed atomic.Bool
	h3 := &http3.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Host != "hysteria" || r.URL.Path != "/auth" || r.Header.Get("Hysteria-Auth") != s.auth {
			http.NotFound(w, r)
			return
		}
		s.lastRx.Store(r.Header.Get("Hysteria-CC-RX"))
		w.Header().Set("Hysteria-UDP", map[bool]string{true: "true", false: "false"}[s.udp])
		w.Header().Set("Hysteria-CC-RX", "auto")
		authed.Store(true)
		s.accepted.Add(1)
		w.WriteHeader(statusAuthOK)
	})}
	rc, err := h3.NewRawServerConn(qc)
	if err != nil {
		return
	}
	go func() {
		for {
			st, err := qc.AcceptUniStream(context.Background())
			if err != nil {
				return
			}
			go rc.HandleUnidirectionalStream(st)
		}
	}()
	if s.udp {
		go s.relayUDP(qc)
	}
	first := true
	for {
		st, err := qc.AcceptStream(context.Background())
		if err != nil {
			return
		}
		if first { // the auth request
			first = false
			go rc.HandleRequestStream(st)
			continue
		}
		if !authed.Load() {
			st.CancelRead(0)
			st.CancelWrite(0)
			continue
		}
		go s.relayTCP(st)
	}
}

func (s *testServer) relayTCP(st *quic.Stream) {
	addr, err := readTCPRequest(st)
	if err != nil {
		st.CancelRead(0)
		st.CancelWrite(0)
		return
	}
	up, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		resp, _ := appendTCPResponse(nil, false, err.Error(), 16)
		st.Write(resp)
		st.Close()
		return
	}
	defer up.Close()
	resp, _ := appendTCPResponse(nil, true, "", 16)
	if _, err := st.Write(resp); err != nil {
		return
	}
	go func() { io.Copy(up, st); up.(*net.TCPConn).CloseWrite() }()
	io.Copy(st, up)
	st.Close()
}

func (s *testServer) relayUDP(qc *quic.Conn) {
	type session struct {
		sock   *net.UDPConn
		defrag defragger
	}
	sessions := map[uint32]*session{}
	defer func() {
		for _, ss := range sessions {
			ss.sock.Close()
		}
	}()
	var m udpMessage
	for {
		b, err := qc.ReceiveDatagram(context.Background())
		if err != nil {
			return
		}
		if parseUDPMessage(b, &m) != nil {
			continue
		}
		ss := sessions[m.SessionID]
		if ss == nil {
			sock, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				continue
			}
			ss = &session{sock: sock}
			sessions[m.SessionID] = ss
			go func(id uint32) {
				buf := make([]byte, 65535)
				var pid uint16
				for {
					n, from, err := sock.ReadFromUDPAddrPort(buf)
					if err != nil {
						return
					}
					r := udpMessage{SessionID: id, FragCount: 1, Addr: []byte(from.String()), Payload: buf[:n]}
					err = qc.SendDatagram(appendUDPMessage(nil, &r))
					var tl *quic.DatagramTooLargeError
					if errors.As(err, &tl) {
						pid++
						chunk, count, _ := quicconn.FragmentPlan(r.headerLen(), n, int(tl.MaxDatagramPayloadSize))
						for i := range count {
							f := fragment(&r, pid, chunk, count, i)
							qc.SendDatagram(appendUDPMessage(nil, &f))
						}
					}
				}
			}(m.SessionID)
		}
		p, ok := ss.defrag.feed(&m)
		if !ok {
			continue
		}
		dst, err := net.ResolveUDPAddr("udp", string(m.Addr))
		if err != nil {
			continue
		}
		ss.sock.WriteTo(p, dst)
	}
}

func testNode(port uint16, auth, obfs string) *node.Node {
	n := &node.Node{
		Protocol:  node.Hysteria2,
		Server:    "127.0.0.1",
		Port:      port,
		TLS:       &node.TLS{SNI: "hy2.test", Insecure: true},
		Hysteria2: &node.Hysteria2Options{Auth: auth, DownMbps: 100},
	}
	if obfs != "" {
		n.Hysteria2.Obfs, n.Hysteria2.ObfsPassword = "salamander", obfs
	}
	return n
}

func newClient(t *testing.T, n *node.Node) *Client {
	t.Helper()
	c, err := New(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func echoTCP(t *testing.T, c *Client, echo flow.Addr, size int) {
	t.Helper()
	conn, err := c.DialContext(ctxT(t, 10*time.Second), "tcp", echo)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data := make([]byte, size)
	rand.Read(data)
	go conn.Write(data)
	got := make([]byte, size)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("TCP echo differs")
	}
}

func echoUDP(t *testing.T, pc net.PacketConn, echo flow.Addr, size int) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	buf := make([]byte, 65535)
	for try := 0; try < 3; try++ { // datagrams may be lost
		if _, err := pc.WriteTo(data, echo); err != nil {
			t.Fatal(err)
		}
		pc.SetReadDeadline(time.Now().Add(time.Second))
		n, from, err := pc.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			t.Fatal(err)
		}
		if err != nil {
			continue
		}
		if fa, ok := from.(flow.Addr); !ok || fa != echo {
			t.Fatalf("reply from %v (%T), want %v as flow.Addr", from, from, echo)
		}
		if !bytes.Equal(buf[:n], data) {
			t.Fatalf("UDP echo of %d bytes differs (got %d)", size, n)
		}
		return
	}
	t.Fatalf("no UDP echo of %d bytes", size)
}

func TestClientRelays(t *testing.T) {
	tests := []struct {
		name   string
		obfs   string
		server string
	}{
		{"plain", "", "127.0.0.1"},
		{"salamander", "obfs-password", "127.0.0.1"},
		{"IPv6 server", "", "::1"},
	}
	tcpEcho, udpEcho := flow.AddrFromAddrPort(nettest.TCPEcho(t)), flow.AddrFromAddrPort(nettest.UDPEcho(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ip := net.ParseIP(tt.server)
			if c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip}); err != nil {
				t.Skipf("no %s here: %v", tt.server, err)
			} else {
				c.Close()
			}
			srv := newTestServerOn(t, ip, "secret", tt.obfs, true)
			n := testNode(srv.port(), "secret", tt.obfs)
			n.Server = tt.server
			c := newClient(t, n)
			echoTCP(t, c, tcpEcho, 2<<20)
			echoTCP(t, c, tcpEcho, 10)
			if rx := srv.lastRx.Load(); rx != "12500000" {
				t.Errorf("Hysteria-CC-RX %v, want 12500000 (100 Mbit/s)", rx)
			}
			pc, err := c.ListenPacket(ctxT(t, 5*time.Second), udpEcho)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			for _, size := range []int{100, 3000, 1, 8000} {
				echoUDP(t, pc, udpEcho, size)
			}
			if n := srv.accepted.Load(); n != 1 {
				t.Errorf("%d connections, want 1 shared by all flows", n)
			}
			// quic-go must get a conn it can batch, offload (GSO) and
			// mark (ECN) on: the UDP socket, wrapped by udpgro for
			// receive offload, or on Linux the batching Salamander conn.
			q, err := c.conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, fast := q.Tr.Conn.(quic.OOBCapablePacketConn)
			if fast != (tt.obfs == "" || runtime.GOOS == "linux") {
				t.Errorf("quic-go runs on a %T (obfs %q)", q.Tr.Conn, tt.obfs)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	srv := newTestServer(t, "secret", "", false)
	echo := flow.AddrFromAddrPort(nettest.TCPEcho(t))
	closedPort := flow.AddrFromAddrPort(nettest.ClosedPort(t))

	tests := []struct {
		name   string
		node   func(*node.Node)
		dst    flow.Addr
		udp    bool
		want   string
		absent string
	}{
		{"wrong password", func(n *node.Node) { n.Hysteria2.Auth = "hunter2" }, echo, false,
			"hysteria2: auth to 127.0.0.1:" + itoa(srv.port()) + ": rejected (status 404)", "hunter2"},
		{"untrusted certificate", func(n *node.Node) { n.TLS.Insecure = false }, echo, false,
			"certificate verification failed", ""},
		{"wrong server name", func(n *node.Node) { n.TLS.Insecure = false; n.TLS.SNI = "other.test" }, echo, false,
			"certificate verification failed", ""},
		{"pin mismatch", func(n *node.Node) { n.TLS.PinSHA256 = strings.Repeat("ab", 32) }, echo, false,
			"certificate verification failed", ""},
		{"refused destination", nil, closedPort, false,
			"hysteria2: " + closedPort.String() + " via 127.0.0.1:" + itoa(srv.port()) + ": refused by server: ", ""},
		{"server without UDP", nil, echo, true, "server does not relay UDP", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := testNode(srv.port(), "secret", "")
			if tt.node != nil {
				tt.node(n)
			}
			c := newClient(t, n)
			var err error
			if tt.udp {
				_, err = c.ListenPacket(ctxT(t, 5*time.Second), tt.dst)
			} else {
				_, err = c.DialContext(ctxT(t, 5*time.Second), "tcp", tt.dst)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want it to contain %q", err, tt.want)
			}
			if tt.absent != "" && strings.Contains(err.Error(), tt.absent) {
				t.Fatalf("err %q shows %q", err, tt.absent)
			}
			// Only the server's refusal of the destination says the
			// server is up (a group keeps the member).
			if refused := tt.dst == closedPort; errors.Is(err, outbound.ErrTargetRefused) != refused {
				t.Errorf("err %v: wraps ErrTargetRefused = %v, want %v", err, !refused, refused)
			}
		})
	}

	t.Run("pin match", func(t *testing.T) {
		n := testNode(srv.port(), "secret", "")
		n.TLS.PinSHA256 = srv.certHash
		echoTCP(t, newClient(t, n), echo, 100)
	})
}

func TestClientRespectsContext(t *testing.T) {
	// A socket that never answers: the dial must end with ctx.
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	c := newClient(t, testNode(uint16(sink.LocalAddr().(*net.UDPAddr).Port), "x", ""))
	start := time.Now()
	_, err = c.DialContext(ctxT(t, 300*time.Millisecond), "tcp", flow.NameAddr("example.com", 80))
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "127.0.0.1:") {
		t.Fatalf("err %v, want a deadline error naming the server", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("dial took %v after a 300ms deadline", d)
	}
}

func TestClientCoalescesDials(t *testing.T) {
	srv := newTestServer(t, "secret", "", true)
	echo := flow.AddrFromAddrPort(nettest.TCPEcho(t))
	c := newClient(t, testNode(srv.port(), "secret", ""))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			conn, err := c.DialContext(ctxT(t, 10*time.Second), "tcp", echo)
			if err != nil {
				errs <- err
				return
			}
			conn.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("%d connections for 16 concurrent first dials, want 1", n)
	}
}

func TestClientReconnects(t *testing.T) {
	tcpEcho, udpEcho := flow.AddrFromAddrPort(nettest.TCPEcho(t)), flow.AddrFromAddrPort(nettest.UDPEcho(t))
	tests := []struct {
		name   string
		break_ func(*testServer)
		max    time.Duration // how long the first dial after the break may take
	}{
		{"server closes the connection", (*testServer).closeConns, time.Second},
		{"server restarts and forgets it", (*testServer).restart, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, "secret", "", true)
			c := newClient(t, testNode(srv.port(), "secret", ""))
			echoTCP(t, c, tcpEcho, 1000)
			pc, err := c.ListenPacket(ctxT(t, 5*time.Second), udpEcho)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			echoUDP(t, pc, udpEcho, 100)

			tt.break_(srv)
			time.Sleep(50 * time.Millisecond)
			start := time.Now()
			echoTCP(t, c, tcpEcho, 1000)
			if d := time.Since(start); d > tt.max {
				t.Errorf("reconnecting took %v, want under %v", d, tt.max)
			}
			// The UDP session carries on over the new connection.
			echoUDP(t, pc, udpEcho, 100)
			if n := srv.accepted.Load(); n < 1 {
				t.Fatalf("the server saw no new connection")
			}
		})
	}
}

func TestClientClose(t *testing.T) {
	srv := newTestServer(t, "secret", "", true)
	tcpEcho, udpEcho := flow.AddrFromAddrPort(nettest.TCPEcho(t)), flow.AddrFromAddrPort(nettest.UDPEcho(t))
	c, err := New(testNode(srv.port(), "secret", ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.DialContext(ctxT(t, 5*time.Second), "tcp", tcpEcho)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.ListenPacket(ctxT(t, 5*time.Second), udpEcho)
	if err != nil {
		t.Fatal(err)
	}
	readDone := make(chan error, 2)
	go func() { _, err := conn.Read(make([]byte, 10)); readDone <- err }()
	go func() { _, _, err := pc.ReadFrom(make([]byte, 10)); readDone <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-readDone:
			if err == nil {
				t.Error("a read returned no error after Close")
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a read still blocks after Close")
		}
	}
	if _, err := c.DialContext(ctxT(t, time.Second), "tcp", tcpEcho); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("dial after Close: %v", err)
	}
}

func TestNewRejectsBadNodes(t *testing.T) {
	tests := []struct {
		name string
		edit func(*node.Node)
	}{
		{"no options", func(n *node.Node) { n.Hysteria2 = nil }},
		{"bad ports", func(n *node.Node) { n.Hysteria2.Ports = "443-" }},
		{"unknown obfs", func(n *node.Node) { n.Hysteria2.Obfs = "gecko" }},
		{"salamander without password", func(n *node.Node) { n.Hysteria2.Obfs = "salamander" }},
		{"bad pin", func(n *node.Node) { n.TLS.PinSHA256 = "xyz" }},
	}
	for _, tt := range tests {
		n := testNode(443, "secret-auth", "")
		tt.edit(n)
		c, err := New(n, nil)
		if err == nil {
			c.Close()
			t.Errorf("%s: New accepted the node", tt.name)
		} else if strings.Contains(err.Error(), "secret-auth") {
			t.Errorf("%s: error shows the auth: %v", tt.name, err)
		}
	}
}

// TestUDPAllocs checks that the per-datagram work of a UDP session
// allocates nothing once the session knows its peer: encoding a datagram
// for WriteTo (the queue's part before it: quicconn's
// TestPacketQueueWriteToAllocs), and delivering a received one to
// ReadFrom. (quic-go's SendDatagram and ReceiveDatagram allocate a buffer
// each on their own.)
func TestUDPAllocs(t *testing.T) {
	c := &Client{srv: quicconn.Server{Name: "test"}}
	pc := &packetConn{c: c, id: 1, PacketQueue: quicconn.NewPacketQueue(nil, quicconn.Sender{}), wbuf: make([]byte, 0, 1500)}
	raw, err := appendAddress(nil, flow.NameAddr("192.0.2.1", 53))
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 100)
	send := func() { pc.encode(p, raw) }
	send()
	if n := testing.AllocsPerRun(500, send); n != 0 {
		t.Errorf("encoding a datagram: %.1f allocations, want 0", n)
	}

	in := appendUDPMessage(nil, &udpMessage{SessionID: 1, FragCount: 1, Addr: []byte("192.0.2.1:53"), Payload: p})
	var m udpMessage
	buf := make([]byte, 1500)
	recv := func() {
		if err := parseUDPMessage(in, &m); err != nil {
			t.Fatal(err)
		}
		pc.deliver(&m)
		n, from, err := pc.ReadFrom(buf)
		if fa, ok := from.(flow.Addr); err != nil || n != len(p) || !ok || fa.Port != 53 {
			t.Fatalf("ReadFrom: %d %v %v", n, from, err)
		}
	}
	recv()
	if n := testing.AllocsPerRun(500, recv); n != 0 {
		t.Errorf("delivering a datagram: %.1f allocations, want 0", n)
	}
}

func itoa(n uint16) string { return strconv.Itoa(int(n)) }

// TestStreamCloseUnblocksWrite closes a stream while a Write is blocked by
// flow control (the destination never reads), as net.Conn allows.
func TestStreamCloseUnblocksWrite(t *testing.T) {
	srv := newTestServer(t, "secret", "", false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			<-stop // accept, never read
		}
	}()
	dst, _ := flow.AddrFromNet(ln.Addr())
	c := newClient(t, testNode(srv.port(), "secret", ""))
	conn, err := c.DialContext(ctxT(t, 5*time.Second), "tcp", dst)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.Write(make([]byte, 256<<20))
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Write of 256 MiB returned early: %v", err)
	default:
	}
	conn.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("blocked Write returned no error after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Write still blocked after Close")
	}
}

// BenchmarkDialStream opens and closes one TCP stream per iteration
// against the in-process server (whose work is counted too).
func BenchmarkDialStream(b *testing.B) {
	srv := newTestServer(b, "secret", "", false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	nettest.Serve(b, ln, func(net.Conn) {})
	dst, _ := flow.AddrFromNet(ln.Addr())
	c, err := New(testNode(srv.port(), "secret", ""), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		conn, err := c.DialContext(ctx, "tcp", dst)
		if err != nil {
			b.Fatal(err)
		}
		conn.Close()
	}
}

// BenchmarkWriteTo sends one 1200-byte datagram per iteration on a UDP
// session through the in-process server to a UDP echo (WriteTo's path:
// the checks, the encoding and quic-go's SendDatagram).
func BenchmarkWriteTo(b *testing.B) {
	srv := newTestServer(b, "secret", "", true)
	echo := flow.AddrFromAddrPort(nettest.UDPEcho(b))
	c, err := New(testNode(srv.port(), "secret", ""), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ListenPacket(context.Background(), echo)
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	var dst net.Addr = echo
	p := make([]byte, 1200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pc.WriteTo(p, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPortSetSpreadsConnections gives the client two server ports and
// checks that new connections go to both.
func TestPortSetSpreadsConnections(t *testing.T) {
	a := newTestServer(t, "secret", "", false)
	b := newTestServer(t, "secret", "", false)
	echo := flow.AddrFromAddrPort(nettest.TCPEcho(t))
	n := testNode(0, "secret", "")
	n.Hysteria2.Ports = itoa(a.port()) + "," + itoa(b.port())
	c := newClient(t, n)
	for range 20 {
		echoTCP(t, c, echo, 10)
		a.closeConns()
		b.closeConns()
		time.Sleep(20 * time.Millisecond)
	}
	// Each pick is a coin flip: both lose all 20 with probability 2^-19.
	if a.accepted.Load() == 0 || b.accepted.Load() == 0 {
		t.Fatalf("connections per port: %d and %d, want both used", a.accepted.Load(), b.accepted.Load())
	}
}

func TestPathStats(t *testing.T) {
	srv := newTestServer(t, "secret", "", false)
	c := newClient(t, testNode(srv.port(), "secret", ""))
	if _, ok := c.PathStats(); ok {
		t.Errorf("path stats before any connection")
	}
	echoTCP(t, c, flow.AddrFromAddrPort(nettest.TCPEcho(t)), 1<<20)
	s, ok := c.PathStats()
	if !ok {
		t.Fatal("no path stats with a live connection")
	}
	if s.RTT <= 0 || s.MinRTT <= 0 {
		t.Errorf("RTT %v, least %v", s.RTT, s.MinRTT)
	}
	if s.BytesReceived < 1<<20 || s.BytesSent < 1<<20 || s.PacketsSent == 0 {
		t.Errorf("counters after a 1 MiB echo: %+v", s)
	}
	if s.DeclaredRx != 12_500_000 {
		t.Errorf("declared receive rate %d, want 12500000 (100 Mbit/s)", s.DeclaredRx)
	}
	var _ outbound.PathStatser = c
}
