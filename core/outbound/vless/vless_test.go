package vless

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
	"github.com/skiffvpn/skiff/core/outbound/internal/udpstreams"
	"github.com/skiffvpn/skiff/internal/nettest"
)

const testUUID = "b831381d-6324-4d53-ad4f-8cda48b30811"

// Destination ports the test server treats specially.
const (
	portBanner  = 2222 // the server speaks first: "banner" after the response
	portDiscard = 9    // the server reads and drops
	portSource  = 19   // the server writes zeros until the stream closes
	portOnce    = 5    // UDP: the server echoes one datagram and closes
)

// request is what the test server parsed from a VLESS request.
type request struct {
	cmd   byte
	dst   flow.Addr
	early int // bytes that came in WebSocket early data
}

// vlessServer is a VLESS server for the tests: over TLS, optionally under
// WebSocket (gobwas/ws server side, early data read from edHeader), it
// checks the user, answers with a response carrying an addon, and echoes
// TCP bytes or UDP datagrams.
type vlessServer struct {
	serverSpec
	t  testing.TB
	id UUID

	addr netip.AddrPort
	pin  string

	mu   sync.Mutex
	reqs []request
}

func (s *vlessServer) start() *vlessServer {
	s.id, _ = node.ParseUUID(testUUID)
	cert, pin := nettest.SelfSigned(s.t, "vless.test")
	s.pin = pin
	tcfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if s.ws {
		ts := httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
		if s.tls {
			ts.TLS = tcfg
			ts.StartTLS()
		} else {
			ts.Start()
		}
		s.t.Cleanup(ts.Close)
		s.addr = netip.MustParseAddrPort(ts.Listener.Addr().String())
		return s
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	if s.tls {
		ln = tls.NewListener(ln, tcfg)
	}
	var wg sync.WaitGroup
	s.t.Cleanup(func() { ln.Close(); wg.Wait() })
	s.addr = netip.MustParseAddrPort(ln.Addr().String())
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				s.serve(c, 0)
			}()
		}
	}()
	return s
}

func (s *vlessServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.path {
		http.NotFound(w, r)
		return
	}
	var early []byte
	if s.edHeader != "" {
		if v := r.Header.Get(s.edHeader); v != "" {
			var err error
			if early, err = base64.RawURLEncoding.DecodeString(v); err != nil {
				http.Error(w, "bad early data", http.StatusBadRequest)
				return
			}
		}
	}
	conn, _, _, err := ws.UpgradeHTTP(r, w)
	if err != nil {
		return
	}
	defer conn.Close()
	s.serve(&wsStream{c: conn, pre: early}, len(early))
}

func (s *vlessServer) serve(rw io.ReadWriter, early int) {
	var h [18]byte
	if _, err := io.ReadFull(rw, h[:]); err != nil || h[0] != 0 || !bytes.Equal(h[1:17], s.id[:]) {
		return // as real servers do: close without a word
	}
	addons := make([]byte, h[17])
	var c [4]byte
	if _, err := io.ReadFull(rw, addons); err != nil {
		return
	}
	if _, err := io.ReadFull(rw, c[:]); err != nil {
		return
	}
	req := request{cmd: c[0], early: early}
	port := binary.BigEndian.Uint16(c[1:3])
	switch c[3] {
	case atypIPv4, atypIPv6:
		b := make([]byte, 4)
		if c[3] == atypIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(rw, b); err != nil {
			return
		}
		ip, _ := netip.AddrFromSlice(b)
		req.dst = flow.AddrFromAddrPort(netip.AddrPortFrom(ip, port))
	case atypDomain:
		var l [1]byte
		io.ReadFull(rw, l[:])
		b := make([]byte, l[0])
		if _, err := io.ReadFull(rw, b); err != nil {
			return
		}
		req.dst = flow.NameAddr(string(b), port)
	default:
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	// A response with an addon (flow ""), which the client must skip.
	if _, err := rw.Write([]byte{0, 2, 0x0a, 0}); err != nil {
		return
	}
	switch {
	case req.cmd == cmdUDP:
		var hdr [2]byte
		buf := make([]byte, maxPacket)
		for {
			n, err := udpstreams.ReadFramed(rw, &hdr, buf)
			if err != nil {
				return
			}
			out, _ := appendPacket(nil, buf[:n])
			if _, err := rw.Write(out); err != nil || req.dst.Port == portOnce {
				return
			}
		}
	case req.dst.Port == portBanner:
		rw.Write([]byte("banner"))
		io.Copy(rw, rw)
	case req.dst.Port == portDiscard:
		// Under WebSocket, drop the frames unparsed: benchmarks measure
		// the client, not gobwas's server-side reader.
		if w, ok := rw.(*wsStream); ok {
			io.Copy(io.Discard, w.c)
		}
		io.Copy(io.Discard, rw)
	case req.dst.Port == portSource:
		buf := make([]byte, 32<<10)
		if w, ok := rw.(*wsStream); ok {
			// One pre-built frame, written as is: no allocation per
			// message on the server side.
			var frame bytes.Buffer
			ws.WriteFrame(&frame, ws.NewBinaryFrame(buf))
			buf, rw = frame.Bytes(), w.c
		}
		for {
			if _, err := rw.Write(buf); err != nil {
				return
			}
		}
	default:
		io.Copy(rw, rw)
	}
}

func (s *vlessServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

// node returns a node for s with the given UUID and TLS settings; nil tlsOpt
// means verified by pin.
func (s *vlessServer) node(id string, tlsOpt *node.TLS) *node.Node {
	n := &node.Node{Name: "test", Protocol: node.VLESS, Server: s.addr.Addr().String(), Port: s.addr.Port(),
		VLESS: &node.VLESSOptions{UUID: id, Encryption: "none"}}
	if s.tls {
		n.TLS = tlsOpt
		if n.TLS == nil {
			n.TLS = &node.TLS{SNI: "vless.test", Insecure: true, PinSHA256: s.pin}
		}
	}
	if s.ws {
		n.Transport = &node.Transport{Type: node.TransportWS, Path: s.path, Host: "cdn.example"}
		if s.edHeader != "" {
			n.Transport.MaxEarlyData = 2048
			n.Transport.EarlyDataHeader = s.edHeader
		}
	}
	return n
}

// serverSpec is the transport a test server speaks.
type serverSpec struct {
	tls      bool
	ws       bool
	path     string
	edHeader string
}

// wsStream is the server's side of a WebSocket as a byte stream.
type wsStream struct {
	c   net.Conn
	pre []byte
}

func (s *wsStream) Read(p []byte) (int, error) {
	for len(s.pre) == 0 {
		msg, _, err := wsutil.ReadClientData(s.c)
		if err != nil {
			return 0, err
		}
		s.pre = msg
	}
	n := copy(p, s.pre)
	s.pre = s.pre[n:]
	return n, nil
}

func (s *wsStream) Write(p []byte) (int, error) {
	return len(p), wsutil.WriteServerBinary(s.c, p)
}

var transports = []struct {
	name string
	spec serverSpec
}{
	{"tcp", serverSpec{}},
	{"tcp+tls", serverSpec{tls: true}},
	{"ws", serverSpec{ws: true, path: "/ws"}},
	{"ws+tls", serverSpec{ws: true, tls: true, path: "/ws"}},
	{"ws+tls early data", serverSpec{ws: true, tls: true, path: "/ed", edHeader: "Sec-WebSocket-Protocol"}},
	{"ws+tls early data header", serverSpec{ws: true, tls: true, path: "/ed", edHeader: "X-Early"}},
}

func startServer(t testing.TB, i int) *vlessServer {
	s := &vlessServer{serverSpec: transports[i].spec, t: t}
	return s.start()
}

func newClient(t testing.TB, n *node.Node) *Client {
	t.Helper()
	c, err := New(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStreamEcho(t *testing.T) {
	for i, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s := startServer(t, i)
			c := newClient(t, s.node(testUUID, nil))
			dsts := []flow.Addr{flow.NameAddr("echo.example", 7), flow.AddrFromAddrPort(netip.MustParseAddrPort("[2001:db8::1]:7"))}
			for _, dst := range dsts {
				conn, err := c.DialContext(ctxT(t), "tcp", dst)
				if err != nil {
					t.Fatal(err)
				}
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				msg := make([]byte, 1<<20)
				rand.Read(msg)
				errc := make(chan error, 1)
				go func() {
					var err error
					for off := 0; off < len(msg) && err == nil; off += 50000 {
						_, err = conn.Write(msg[off:min(off+50000, len(msg))])
					}
					errc <- err
				}()
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(conn, got); err != nil {
					t.Fatalf("read: %v", err)
				}
				if err := <-errc; err != nil {
					t.Fatalf("write: %v", err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatal("echo differs")
				}
				conn.Close()
			}
			reqs := s.requests()
			if len(reqs) != 2 || reqs[0].cmd != cmdTCP || reqs[0].dst != dsts[0] || reqs[1].dst != dsts[1] {
				t.Fatalf("server saw %+v", reqs)
			}
			if s.edHeader != "" && reqs[0].early != 2048 {
				// header + first 2048-byte-capped write went in the upgrade
				t.Fatalf("early data: %d bytes, want 2048", reqs[0].early)
			}
		})
	}
}

func TestServerFirst(t *testing.T) {
	s := startServer(t, 4) // early data: the upgrade waits for the header
	c := newClient(t, s.node(testUUID, nil))
	conn, err := c.DialContext(ctxT(t), "tcp", flow.NameAddr("smtp.example", portBanner))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	got := make([]byte, 6)
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "banner" {
		t.Fatalf("read: %q, %v", got, err)
	}
	if d := time.Since(start); d < reqconn.FirstWriteWait {
		t.Fatalf("banner after %v: the header went before waiting for a write", d)
	}
	if r := s.requests(); len(r) != 1 || r[0].early == 0 {
		t.Fatalf("server saw %+v", r)
	}
}

func TestPacket(t *testing.T) {
	for i, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s := startServer(t, i)
			c := newClient(t, s.node(testUUID, nil))
			d1 := flow.AddrFromAddrPort(netip.MustParseAddrPort("10.0.0.1:53"))
			d2 := flow.NameAddr("dns.example", 53)
			pc, err := c.ListenPacket(ctxT(t), d1)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			pc.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, maxPacket)
			for _, n := range []int{100, 3000, 0, maxPacket} {
				for _, to := range []net.Addr{d1, d2, d1.UDPAddr()} {
					msg := bytes.Repeat([]byte{byte(n)}, n)
					if _, err := pc.WriteTo(msg, to); err != nil {
						t.Fatal(err)
					}
					m, from, err := pc.ReadFrom(buf)
					if err != nil {
						t.Fatal(err)
					}
					want, _ := flow.AddrFromNet(to)
					if !bytes.Equal(buf[:m], msg) || from != want {
						t.Fatalf("%d bytes to %v: got %d bytes from %v", n, to, m, from)
					}
				}
			}
			reqs := s.requests()
			if len(reqs) != 2 || reqs[0].cmd != cmdUDP || reqs[0].dst != d1 || reqs[1].dst != d2 {
				t.Fatalf("server saw %+v", reqs)
			}
			if _, err := pc.WriteTo(make([]byte, maxPacket+1), d1); err == nil {
				t.Fatal("oversized datagram: want an error")
			}
			pc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			if _, _, err := pc.ReadFrom(buf); !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
				t.Fatalf("read past deadline: %v", err)
			}
			pc.Close()
			if _, _, err := pc.ReadFrom(buf); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read after close: %v", err)
			}
		})
	}
}

// A stream the server ends after a datagram is dialed again by the next
// WriteTo; ReadFrom reports nothing for it.
func TestPacketRedial(t *testing.T) {
	s := startServer(t, 3)
	c := newClient(t, s.node(testUUID, nil))
	dst := flow.NameAddr("once.example", portOnce)
	pconn, err := c.ListenPacket(ctxT(t), dst)
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close()
	pc := pconn.(*udpstreams.Conn)
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	for i := range 3 {
		if _, err := pc.WriteTo([]byte{byte(i)}, dst); err != nil {
			t.Fatal(err)
		}
		if n, _, err := pc.ReadFrom(buf); err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("round %d: %d bytes, %v", i, n, err)
		}
		// Wait for the reader to see the end of the stream.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if !pc.Has(dst) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("stream still open after the server closed it")
			}
		}
	}
	if n := len(s.requests()); n != 3 {
		t.Fatalf("%d streams, want 3", n)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestErrors(t *testing.T) {
	s := startServer(t, 3) // ws+tls
	srv := s.addr.String()

	// Wrong user: the server closes; the first Read says so, naming the
	// server and not the UUID.
	const otherUUID = "00000000-0000-0000-0000-000000000001"
	c := newClient(t, s.node(otherUUID, nil))
	conn, err := c.DialContext(ctxT(t), "tcp", flow.NameAddr("a.example", 7))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	conn.Write([]byte("hello"))
	_, err = conn.Read(make([]byte, 10))
	if err == nil || !strings.Contains(err.Error(), "response from "+srv) || strings.Contains(err.Error(), otherUUID) {
		t.Fatalf("wrong uuid: %v", err)
	}
	conn.Close()
	pc, err := c.ListenPacket(ctxT(t), flow.NameAddr("a.example", 53))
	if err != nil {
		t.Fatal(err)
	}
	pc.SetDeadline(time.Now().Add(5 * time.Second))
	pc.WriteTo([]byte("q"), flow.NameAddr("a.example", 53))
	if _, _, err := pc.ReadFrom(make([]byte, 10)); err == nil || !strings.Contains(err.Error(), srv) {
		t.Fatalf("wrong uuid, udp: %v", err)
	}
	pc.Close()

	tests := []struct {
		name string
		n    *node.Node
		want string
	}{
		{"404", func() *node.Node { n := s.node(testUUID, nil); n.Transport.Path = "/nope"; return n }(),
			"vless: " + srv + ": ws: upgrade to cdn.example/nope: server answered 404"},
		{"untrusted certificate", s.node(testUUID, &node.TLS{SNI: "vless.test"}),
			"vless: TLS handshake with " + srv + ": tls: failed to verify certificate"},
		{"wrong pin", s.node(testUUID, &node.TLS{Insecure: true, PinSHA256: strings.Repeat("ab", 32)}),
			"vless: TLS handshake with " + srv + ": tls: 127.0.0.1: certificate does not match"},
		{"server down", func() *node.Node { n := s.node(testUUID, nil); n.Port = 1; return n }(),
			"vless: dial 127.0.0.1:1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.n)
			_, err := c.DialContext(ctxT(t), "tcp", flow.NameAddr("a.example", 7))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant prefix %s", err, tt.want)
			}
			if _, err := c.ListenPacket(ctxT(t), flow.NameAddr("a.example", 53)); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("ListenPacket err = %v", err)
			}
		})
	}

	// With early data the upgrade, and its error, come with the first Write.
	se := startServer(t, 4)
	n := se.node(testUUID, nil)
	n.Transport.Path = "/nope"
	conn, err = newClient(t, n).DialContext(ctxT(t), "tcp", flow.NameAddr("a.example", 7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "server answered 404") {
		t.Fatalf("early data, 404: %v", err)
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "server answered 404") {
		t.Fatalf("early data, 404, read: %v", err)
	}
	conn.Close()
}

func TestClientClose(t *testing.T) {
	s := startServer(t, 1)
	c, err := New(s.node(testUUID, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.DialContext(ctxT(t), "tcp", flow.NameAddr("a.example", 7))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.ListenPacket(ctxT(t), flow.NameAddr("a.example", 53))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := pc.ReadFrom(make([]byte, 10)); done <- err }()
	c.Close()
	if _, err := conn.Write([]byte("x")); err == nil {
		t.Fatal("stream still open after Client.Close")
	}
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadFrom after Client.Close: %v", err)
	}
	if _, err := c.DialContext(ctxT(t), "tcp", flow.NameAddr("a.example", 7)); err == nil {
		t.Fatal("dial after Close succeeded")
	}
}

func TestNew(t *testing.T) {
	base := func() *node.Node {
		return &node.Node{Protocol: node.VLESS, Server: "vless.example", Port: 443, TLS: &node.TLS{},
			VLESS: &node.VLESSOptions{UUID: testUUID}}
	}
	tests := []struct {
		name string
		mod  func(n *node.Node)
		want string // error substring; "" means success
	}{
		{"plain", func(n *node.Node) {}, ""},
		{"raw", func(n *node.Node) { n.Transport = &node.Transport{Type: "raw"} }, ""},
		{"ws", func(n *node.Node) { n.Transport = &node.Transport{Type: "ws", Path: "/x?ed=2560"} }, ""},
		{"vision", func(n *node.Node) { n.VLESS.Flow = "xtls-rprx-vision" }, ""},
		{"vision udp443", func(n *node.Node) { n.VLESS.Flow = "xtls-rprx-vision-udp443" }, ""},
		{"vision without tls", func(n *node.Node) { n.VLESS.Flow = "xtls-rprx-vision"; n.TLS = nil }, "needs TLS or REALITY"},
		{"vision over ws", func(n *node.Node) {
			n.VLESS.Flow = "xtls-rprx-vision"
			n.Transport = &node.Transport{Type: "ws"}
		}, "runs over tcp only, not ws"},
		{"grpc", func(n *node.Node) { n.Transport = &node.Transport{Type: "grpc"} }, ""},
		{"vision over grpc", func(n *node.Node) {
			n.VLESS.Flow = "xtls-rprx-vision"
			n.Transport = &node.Transport{Type: "grpc"}
		}, "runs over tcp only, not grpc"},
		{"httpupgrade", func(n *node.Node) { n.Transport = &node.Transport{Type: "httpupgrade"} }, ""},
		{"quic", func(n *node.Node) { n.Transport = &node.Transport{Type: "quic"} }, `transport "quic" is not supported yet`},
		{"h2", func(n *node.Node) { n.Transport = &node.Transport{Type: "h2"} }, ""},
		{"h2 without tls", func(n *node.Node) { n.TLS = nil; n.Transport = &node.Transport{Type: "h2"} }, "h2 without TLS"},
		{"reality", func(n *node.Node) {
			n.TLS.Reality = &node.Reality{PublicKey: "jNXHt1yRo0vDuchQlIP6Z0ZvjT3KtzVI-T4E7RoLJS0", ShortID: "01"}
		}, ""},
		{"reality bad key", func(n *node.Node) { n.TLS.Reality = &node.Reality{PublicKey: "k"} }, "reality: public key"},
		{"encryption", func(n *node.Node) { n.VLESS.Encryption = "aes-128-gcm" }, "encryption"},
		{"bad ed", func(n *node.Node) { n.Transport = &node.Transport{Type: "ws", Path: "/x?ed=lots"} }, "bad ed"},
		{"bad uuid", func(n *node.Node) { n.VLESS.UUID = "b831381d-6324-4d53-ad4f-8cda48b3081z" }, "vless: uuid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base()
			tt.mod(n)
			c, err := New(n, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), n.VLESS.UUID):
				t.Fatalf("error quotes the UUID: %v", err)
			case err == nil:
				c.Close()
			}
		})
	}
}

// BenchmarkStream measures one stream's upload (server discards) and
// download (server sends) through each transport over loopback.
func BenchmarkStream(b *testing.B) {
	for i, tr := range transports {
		for _, dir := range []string{"up", "down"} {
			b.Run(fmt.Sprintf("%s/%s", tr.name, dir), func(b *testing.B) {
				s := startServer(b, i)
				c := newClient(b, s.node(testUUID, nil))
				port := uint16(portDiscard)
				if dir == "down" {
					port = portSource
				}
				conn, err := c.DialContext(ctxT(b), "tcp", flow.NameAddr("bench.example", port))
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				buf := make([]byte, 32<<10)
				if dir == "down" {
					conn.Write([]byte("go"))
				}
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if dir == "up" {
						if _, err := conn.Write(buf); err != nil {
							b.Fatal(err)
						}
					} else if _, err := io.ReadFull(conn, buf); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
			})
		}
	}
}

// TestStreamWriteFrame checks the relay's FrameWriter path through a VLESS
// stream: the first WriteFrame carries the request header the usual way,
// later ones let the WebSocket build its frame in the caller's buffer; over
// TCP and TLS there is no headroom and WriteFrame is Write.
func TestStreamWriteFrame(t *testing.T) {
	for i, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s := startServer(t, i)
			c := newClient(t, s.node(testUUID, nil))
			nc, err := c.DialContext(ctxT(t), "tcp", flow.NameAddr("echo.example", 7))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			vc := nc.(*reqconn.Conn)
			h := vc.FrontHeadroom()
			if want := map[bool]int{false: 0, true: ws.MaxHeaderSize}[tr.spec.ws]; h != want {
				t.Fatalf("headroom %d, want %d", h, want)
			}
			for _, n := range []int{3000, 1, 60 << 10} {
				msg := make([]byte, n)
				rand.Read(msg)
				b := make([]byte, h+n)
				copy(b[h:], msg)
				if w, err := vc.WriteFrame(b); w != n || err != nil {
					t.Fatalf("WriteFrame of %d: %d, %v", n, w, err)
				}
				got := make([]byte, n)
				if _, err := io.ReadFull(vc, got); err != nil {
					t.Fatalf("read %d: %v", n, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("echo of %d bytes differs", n)
				}
			}
		})
	}
}
