package tuic

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/internal/nettest"
)

const testUUID = "6f1c3e0a-9d2b-4c7e-8f5a-1b2c3d4e5f60"

// testServer is a small TUIC v5 server written from the specification on
// quic-go, for the client's tests: it checks the Authenticate command,
// echoes Connect streams (the data after the address) and echoes UDP
// packets in the mode they came in. (Interop with sing-box's server is
// checked by the end-to-end tests under test/.)
type testServer struct {
	addr     netip.AddrPort
	pin      string
	accepted atomic.Int32 // connections that authenticated
	used0RTT atomic.Int32 // of them, resumed with 0-RTT
	sni      chan string  // the server name of each ClientHello
}

func newTestServer(t *testing.T, password string) *testServer {
	t.Helper()
	s := &testServer{sni: make(chan string, 16)}
	cert, pin := nettest.SelfSigned(t, "tuic.test")
	s.pin = pin
	sock, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s.addr = sock.LocalAddr().(*net.UDPAddr).AddrPort()
	tr := &quic.Transport{Conn: sock}
	ln, err := tr.ListenEarly(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h3"},
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			select {
			case s.sni <- h.ServerName:
			default:
			}
			return nil, nil
		}},
		&quic.Config{EnableDatagrams: true, Allow0RTT: true, MaxIdleTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); tr.Close(); sock.Close() })
	id, _ := node.ParseUUID(testUUID)
	go func() {
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go s.serve(qc, id, password)
		}
	}()
	return s
}

func (s *testServer) serve(qc *quic.Conn, id [16]byte, password string) {
	ctx := qc.Context()
	authed := make(chan struct{})
	go func() { // the Authenticate command, then UDP packets on uni streams
		first := true
		for {
			st, err := qc.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(st)
			if first {
				first = false
				<-qc.HandshakeComplete()
				cs := qc.ConnectionState().TLS
				token, _ := cs.ExportKeyingMaterial(string(id[:]), []byte(password), tokenLen)
				if !bytes.Equal(b, appendAuthenticate(nil, id, token)) {
					qc.CloseWithError(0, "")
					return
				}
				s.accepted.Add(1)
				if qc.ConnectionState().Used0RTT {
					s.used0RTT.Add(1)
				}
				close(authed)
				continue
			}
			var p packet
			if parsePacket(b, &p) == nil {
				if out, err := qc.OpenUniStream(); err == nil {
					out.Write(b)
					out.Close()
				}
			}
		}
	}()
	go func() { // UDP in datagrams
		for {
			b, err := qc.ReceiveDatagram(ctx)
			if err != nil {
				return
			}
			var p packet
			if parsePacket(b, &p) == nil {
				qc.SendDatagram(b)
			}
		}
	}()
	for {
		st, err := qc.AcceptStream(ctx)
		if err != nil {
			return
		}
		go func() {
			select {
			case <-authed:
			case <-ctx.Done():
				return
			}
			var hdr [2]byte
			if _, err := io.ReadFull(st, hdr[:]); err != nil || hdr != [2]byte{version, cmdConnect} {
				st.CancelRead(1)
				return
			}
			buf := make([]byte, 300)
			n, _ := io.ReadAtLeast(st, buf, 1)
			if _, an, err := parseAddr(buf[:n]); err == nil {
				st.Write(buf[an:n])
			}
			io.Copy(st, st)
			st.Close()
		}()
	}
}

func testClient(t *testing.T, s *testServer, password string, o node.TUICOptions, noSNI ...bool) *Client {
	t.Helper()
	o.UUID, o.Password = testUUID, password
	n := &node.Node{Name: "t", Protocol: node.TUIC, Server: "127.0.0.1", Port: s.addr.Port(),
		TLS: &node.TLS{SNI: "tuic.test", Insecure: true, PinSHA256: s.pin, NoSNI: len(noSNI) > 0 && noSNI[0]}, TUIC: &o}
	c, err := New(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func echoTCP(t *testing.T, c *Client, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("echo.test", 7))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	data := bytes.Repeat([]byte("tuic"), size/4)
	go conn.Write(data)
	got := make([]byte, len(data))
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echo of %d bytes: %v", len(data), err)
	}
}

func TestTCPAndUDP(t *testing.T) {
	for _, mode := range []string{"native", "quic"} {
		t.Run(mode, func(t *testing.T) {
			s := newTestServer(t, "pw")
			c := testClient(t, s, "pw", node.TUICOptions{UDPRelayMode: mode})
			echoTCP(t, c, 1<<20)
			echoTCP(t, c, 1000)
			if n := s.accepted.Load(); n != 1 {
				t.Errorf("%d connections for two flows, want 1 shared", n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			dst := flow.NameAddr("dns.test", 53)
			pc, err := c.ListenPacket(ctx, dst)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			for _, size := range []int{10, 3000, 20000} { // 3000 and 20000 are fragmented in native mode
				msg := bytes.Repeat([]byte{byte(size)}, size)
				buf := make([]byte, 65535)
				// UDP may lose a datagram (a loaded machine drops QUIC
				// datagrams, and in native mode one lost fragment loses
				// the whole): an app sends again, and so does the test.
				var err error
				for attempt := 1; attempt <= 4; attempt++ {
					pc.SetReadDeadline(time.Now().Add(2 * time.Second))
					if _, err := pc.WriteTo(msg, dst); err != nil {
						t.Fatal(err)
					}
					var n int
					var from net.Addr
					for n, from, err = pc.ReadFrom(buf); err == nil && n != size; n, from, err = pc.ReadFrom(buf) {
						// a late echo of an earlier send
					}
					if err == nil {
						if !bytes.Equal(buf[:n], msg) || from.(flow.Addr) != dst {
							t.Fatalf("UDP echo of %d bytes: got %d from %v", size, n, from)
						}
						break
					}
				}
				if err != nil {
					t.Fatalf("UDP echo of %d bytes: no answer to 4 sends: %v", size, err)
				}
			}
		})
	}
}

// TestDisableSNI: with disable_sni the ClientHello names no server (and
// the pinned certificate is still checked); without it, the SNI is sent.
func TestDisableSNI(t *testing.T) {
	for _, noSNI := range []bool{false, true} {
		s := newTestServer(t, "pw")
		c := testClient(t, s, "pw", node.TUICOptions{}, noSNI)
		echoTCP(t, c, 1000)
		want := "tuic.test"
		if noSNI {
			want = ""
		}
		if got := <-s.sni; got != want {
			t.Errorf("disable_sni %v: server saw SNI %q, want %q", noSNI, got, want)
		}
	}
}

// TestZeroRTTOnRedial: with ZeroRTT, the connection dialled after a
// network change resumes the first one's TLS session in 0-RTT and still
// authenticates.
func TestZeroRTTOnRedial(t *testing.T) {
	s := newTestServer(t, "pw")
	c := testClient(t, s, "pw", node.TUICOptions{ZeroRTT: true})
	echoTCP(t, c, 1000)
	time.Sleep(100 * time.Millisecond) // the session ticket arrives after the handshake
	c.NetworkChanged()
	echoTCP(t, c, 1000)
	if a, z := s.accepted.Load(), s.used0RTT.Load(); a != 2 || z != 1 {
		t.Fatalf("%d connections authenticated, %d in 0-RTT; want 2 and 1", a, z)
	}
}

func TestWrongPassword(t *testing.T) {
	s := newTestServer(t, "pw")
	c := testClient(t, s, "wrong", node.TUICOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("echo.test", 7))
	if err == nil {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		conn.Write([]byte("hi"))
		_, err = conn.Read(make([]byte, 10))
		conn.Close()
	}
	if !errors.Is(err, outbound.ErrAuthRejected) {
		t.Fatalf("err %v, want the authentication rejected", err)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		o    node.TUICOptions
		want string
	}{
		{node.TUICOptions{UUID: "name", Password: "p"}, "uuid"},
		{node.TUICOptions{UUID: testUUID, Password: "p", CongestionControl: "brutal"}, "congestion control"},
		{node.TUICOptions{UUID: testUUID, Password: "p", UDPRelayMode: "stream"}, "udp relay mode"},
		{node.TUICOptions{UUID: testUUID, Password: "p", UDPOverStream: true}, "udp_over_stream"},
	} {
		o := tc.o
		_, err := New(&node.Node{Server: "x", Port: 1, TUIC: &o}, nil)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%+v: err %v, want one naming %q", tc.o, err, tc.want)
		}
	}
	for _, cc := range []string{"", "cubic", "new_reno", "bbr"} {
		o := node.TUICOptions{UUID: testUUID, Password: "p", CongestionControl: cc}
		c, err := New(&node.Node{Server: "x", Port: 1, TUIC: &o}, nil)
		if err != nil {
			t.Errorf("congestion control %q: %v", cc, err)
			continue
		}
		c.Close()
	}
}
