package hysteria

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
	"github.com/skiffvpn/skiff/core/outbound/internal/xorobfs"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// testServer is a Hysteria v1 server for the tests, written from the
// protocol as sing-box's and apernet's servers behave: a datagram for a
// session it does not know closes the connection.
type testServer struct {
	t        testing.TB
	auth     string
	closeBad atomic.Bool // on a wrong auth, close the connection at once instead of answering
	ln       *quic.Listener
	tr       *quic.Transport

	mu       sync.Mutex
	sessions map[uint32]*testSession
	nextID   uint32

	unknown atomic.Int32 // datagrams for sessions it did not know
	hellos  atomic.Int32
}

type testSession struct {
	hold *quic.Stream
	sock *net.UDPConn
}

func newTestServer(t testing.TB, auth, obfs string) *testServer {
	t.Helper()
	sock, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var pc net.PacketConn = sock
	if obfs != "" {
		pc = xorobfs.NewConn(sock, xorobfs.XPlus, obfs)
	}
	cert, _ := nettest.SelfSigned(t, "hy.test")
	s := &testServer{t: t, auth: auth, tr: &quic.Transport{Conn: pc}, sessions: map[uint32]*testSession{}}
	s.ln, err = s.tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{DefaultALPN}},
		&quic.Config{EnableDatagrams: true, MaxIdleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close(); s.tr.Close(); sock.Close() })
	go func() {
		for {
			qc, err := s.ln.Accept(context.Background())
			if err != nil {
				return
			}
			go s.serve(qc)
		}
	}()
	return s
}

func (s *testServer) port() uint16 { return uint16(s.ln.Addr().(*net.UDPAddr).Port) }

func (s *testServer) serve(qc *quic.Conn) {
	ctx := qc.Context()
	ctrl, err := qc.AcceptStream(ctx)
	if err != nil {
		return
	}
	var h [1 + 8 + 8 + 2]byte
	if _, err := io.ReadFull(ctrl, h[:]); err != nil || h[0] != protocolVersion {
		qc.CloseWithError(closeCodeProtocol, "protocol error")
		return
	}
	auth := make([]byte, binary.BigEndian.Uint16(h[17:]))
	if _, err := io.ReadFull(ctrl, auth); err != nil {
		return
	}
	s.hellos.Add(1)
	if string(auth) != s.auth {
		if !s.closeBad.Load() {
			msg := "Wrong password"
			ctrl.Write(append(append(make([]byte, 17), byte(len(msg)>>8), byte(len(msg))), msg...))
			time.Sleep(50 * time.Millisecond)
		}
		qc.CloseWithError(closeCodeAuth, "auth error")
		return
	}
	ctrl.Write(append([]byte{1}, make([]byte, 18)...))
	go s.datagrams(qc)
	for {
		st, err := qc.AcceptStream(ctx)
		if err != nil {
			return
		}
		go s.stream(qc, st)
	}
}

func (s *testServer) stream(qc *quic.Conn, st *quic.Stream) {
	var h [3]byte
	if _, err := io.ReadFull(st, h[:]); err != nil {
		return
	}
	host := make([]byte, binary.BigEndian.Uint16(h[1:])+2)
	if _, err := io.ReadFull(st, host); err != nil {
		return
	}
	port := binary.BigEndian.Uint16(host[len(host)-2:])
	if h[0] == 1 { // UDP
		sock, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return
		}
		s.mu.Lock()
		s.nextID++
		id := s.nextID
		s.sessions[id] = &testSession{hold: st, sock: sock}
		s.mu.Unlock()
		st.Write([]byte{1, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id), 0, 0})
		go s.replies(qc, id, sock)
		io.Copy(io.Discard, st)
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
		sock.Close()
		return
	}
	c, err := net.Dial("tcp", net.JoinHostPort(string(host[:len(host)-2]), strconv.Itoa(int(port))))
	if err != nil {
		msg := err.Error()
		st.Write(append([]byte{0, 0, 0, 0, 0, byte(len(msg) >> 8), byte(len(msg))}, msg...))
		st.Close()
		return
	}
	defer c.Close()
	st.Write([]byte{1, 0, 0, 0, 0, 0, 0})
	go func() { io.Copy(c, st); c.(*net.TCPConn).CloseWrite() }()
	io.Copy(st, c)
	st.Close()
}

// endSessions ends every UDP session from the server's side, as a
// server's UDP timeout does.
func (s *testServer) endSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.sessions {
		ss.hold.CancelRead(0)
		ss.hold.Close()
		delete(s.sessions, id)
	}
}

func (s *testServer) datagrams(qc *quic.Conn) {
	var d quicconn.Defragger
	for {
		b, err := qc.ReceiveDatagram(context.Background())
		if err != nil {
			return
		}
		var m udpMessage
		if parseUDPMessage(b, &m) != nil {
			continue
		}
		s.mu.Lock()
		ss := s.sessions[m.SessionID]
		s.mu.Unlock()
		if ss == nil {
			s.unknown.Add(1)
			qc.CloseWithError(0, "unknown session ID")
			return
		}
		p, ok := d.Feed(m.MsgID, m.FragID, m.FragCount, m.Data)
		if !ok {
			continue
		}
		ss.sock.WriteTo(p, &net.UDPAddr{IP: net.ParseIP(string(m.Host)), Port: int(m.Port)})
	}
}

func (s *testServer) replies(qc *quic.Conn, id uint32, sock *net.UDPConn) {
	buf := make([]byte, 65535)
	var msgID uint16
	for {
		n, from, err := sock.ReadFromUDP(buf)
		if err != nil {
			return
		}
		m := udpMessage{SessionID: id, Host: []byte(from.IP.String()), Port: uint16(from.Port), FragCount: 1, Data: buf[:n]}
		err = qc.SendDatagram(appendUDPMessage(nil, &m))
		var tooLarge *quic.DatagramTooLargeError
		if !errors.As(err, &tooLarge) {
			continue
		}
		chunk, count, err := quicconn.FragmentPlan(m.headerLen(), n, int(tooLarge.MaxDatagramPayloadSize))
		if err != nil {
			continue
		}
		msgID++
		for i := range count {
			f := m
			f.MsgID, f.FragID, f.FragCount = msgID, uint8(i), uint8(count)
			f.Data = m.Data[i*chunk : min((i+1)*chunk, n)]
			qc.SendDatagram(appendUDPMessage(nil, &f))
		}
	}
}

func testNode(port uint16, auth, obfs string) *node.Node {
	return &node.Node{
		Protocol: node.Hysteria, Server: "127.0.0.1", Port: port,
		TLS:      &node.TLS{SNI: "hy.test", Insecure: true},
		Hysteria: &node.HysteriaOptions{Auth: []byte(auth), UpMbps: 100, DownMbps: 100, Obfs: obfs},
	}
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

func echoTCP(t *testing.T, c *Client, size int) {
	t.Helper()
	conn, err := c.DialContext(ctxT(t, 5*time.Second), "tcp", flow.AddrFromAddrPort(nettest.TCPEcho(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	want := make([]byte, size)
	rand.Read(want)
	go conn.Write(want)
	got := make([]byte, size)
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("TCP echo of %d bytes: %v", size, err)
	}
}

// echoUDP sends a datagram of each size to a UDP echo server through pc
// and checks that it comes back whole.
func echoUDP(t *testing.T, pc net.PacketConn, echo net.Addr, sizes ...int) {
	t.Helper()
	buf := make([]byte, 65535)
	for _, size := range sizes {
		want := make([]byte, size)
		rand.Read(want)
		pc.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := pc.WriteTo(want, echo); err != nil {
			t.Fatalf("send %d bytes: %v", size, err)
		}
		n, _, err := pc.ReadFrom(buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("UDP echo of %d bytes: got %d, %v", size, n, err)
		}
	}
}

// TestClientRelays carries TCP and UDP (up to 8000-byte datagrams, which
// go in fragments both ways) through the test server, plain and with
// xplus.
func TestClientRelays(t *testing.T) {
	for _, obfs := range []string{"", "xplus-key"} {
		t.Run("obfs="+obfs, func(t *testing.T) {
			srv := newTestServer(t, "secret", obfs)
			c := newClient(t, testNode(srv.port(), "secret", obfs))
			echoTCP(t, c, 1<<20)
			pc, err := c.ListenPacket(ctxT(t, 5*time.Second), flow.Addr{})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			echoUDP(t, pc, net.UDPAddrFromAddrPort(nettest.UDPEcho(t)), 1, 1000, 1400, 3000, 8000)
		})
	}
}

// TestClientWrongAuth: the server's refusal, whether it answers the hello
// or closes the connection with v1's auth code first, is
// outbound.ErrAuthRejected, and the error does not contain the auth.
func TestClientWrongAuth(t *testing.T) {
	for _, closeFirst := range []bool{false, true} {
		srv := newTestServer(t, "secret", "")
		srv.closeBad.Store(closeFirst)
		c := newClient(t, testNode(srv.port(), "wrong-auth", ""))
		_, err := c.DialContext(ctxT(t, 5*time.Second), "tcp", flow.AddrFromAddrPort(nettest.TCPEcho(t)))
		if !errors.Is(err, outbound.ErrAuthRejected) {
			t.Fatalf("close first %v: %v, want ErrAuthRejected", closeFirst, err)
		}
		if bytes.Contains([]byte(err.Error()), []byte("wrong-auth")) {
			t.Fatalf("error shows the auth: %v", err)
		}
		t.Logf("close first %v: %v", closeFirst, err)
	}
}

// TestUDPSessionRenewed: when the server ends a UDP session (its UDP
// timeout), the next datagram asks for a new session instead of sending
// under the dead ID, which would make the server close the whole
// connection with every flow on it.
func TestUDPSessionRenewed(t *testing.T) {
	srv := newTestServer(t, "secret", "")
	c := newClient(t, testNode(srv.port(), "secret", ""))
	pc, err := c.ListenPacket(ctxT(t, 5*time.Second), flow.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	echo := net.UDPAddrFromAddrPort(nettest.UDPEcho(t))
	echoUDP(t, pc, echo, 100)
	q, _ := c.conns.Current()
	srv.endSessions()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := pc.(*packetConn)
		p.bmu.Lock()
		unbound := p.q == nil
		p.bmu.Unlock()
		if unbound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session's end on the server never reached the client")
		}
		time.Sleep(10 * time.Millisecond)
	}
	echoUDP(t, pc, echo, 100, 3000)
	if n := srv.unknown.Load(); n != 0 {
		t.Fatalf("%d datagrams under an ended session's ID", n)
	}
	if q2, _ := c.conns.Current(); q2 != q {
		t.Fatal("the connection was replaced")
	}
}

// TestClientReconnects: after the server drops the connection, TCP and
// the open UDP session carry on over a new one.
func TestClientReconnects(t *testing.T) {
	srv := newTestServer(t, "secret", "")
	c := newClient(t, testNode(srv.port(), "secret", ""))
	pc, err := c.ListenPacket(ctxT(t, 5*time.Second), flow.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	echo := net.UDPAddrFromAddrPort(nettest.UDPEcho(t))
	echoUDP(t, pc, echo, 100)
	q, _ := c.conns.Current()
	q.QC.CloseWithError(0, "test")
	echoTCP(t, c, 1000)
	echoUDP(t, pc, echo, 100, 3000)
	if n := srv.hellos.Load(); n != 2 {
		t.Fatalf("%d hellos, want 2", n)
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*node.HysteriaOptions)
		lack bool // an UnsupportedError (greyed), not a settings error
	}{
		{"no rates", func(o *node.HysteriaOptions) { o.UpMbps, o.DownMbps = 0, 0 }, false},
		{"no down rate", func(o *node.HysteriaOptions) { o.DownMbps = 0 }, false},
		{"faketcp", func(o *node.HysteriaOptions) { o.Protocol = node.HysteriaFakeTCP }, true},
		{"wechat-video", func(o *node.HysteriaOptions) { o.Protocol = node.HysteriaWechatVideo }, true},
		{"unknown protocol", func(o *node.HysteriaOptions) { o.Protocol = "tcp" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := testNode(443, "a", "")
			tt.mod(n.Hysteria)
			_, err := New(n, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			var u *node.UnsupportedError
			if errors.As(err, &u) != tt.lack {
				t.Fatalf("%v: unsupported %v, want %v", err, errors.As(err, &u), tt.lack)
			}
			if tt.lack && u.Lack.Feature != node.FeatureTransport {
				t.Fatalf("lack %+v", u.Lack)
			}
		})
	}
}
