package trojan

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/internal/nettest"
)

const testPassword = "correct horse battery staple"

func TestKey(t *testing.T) {
	// hex SHA-224 of "password" (hashlib.sha224(b"password").hexdigest()).
	k := key("password")
	if got, want := string(k[:]), "d63dc919e201d7bc4c825630d2cf25fdc93d4b2f0d46706d29038d01"; got != want {
		t.Fatalf("key = %s, want %s", got, want)
	}
}

func TestAppendRequest(t *testing.T) {
	k := key("password")
	kh := string(k[:])
	for _, tc := range []struct {
		name string
		cmd  byte
		dst  flow.Addr
		want string // hex after the key and CRLF
	}{
		{"ipv4", cmdConnect, flow.Addr{IP: netip.MustParseAddr("1.2.3.4"), Port: 443}, "01" + "01" + "01020304" + "01bb" + "0d0a"},
		{"ipv6", cmdUDPAssociate, flow.Addr{IP: netip.MustParseAddr("::1"), Port: 53}, "03" + "04" + "00000000000000000000000000000001" + "0035" + "0d0a"},
		{"name", cmdConnect, flow.Addr{Name: "example.com", Port: 80}, "01" + "03" + "0b" + hex.EncodeToString([]byte("example.com")) + "0050" + "0d0a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := appendRequest(nil, &k, tc.cmd, tc.dst)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:keyLen]) != kh || string(b[keyLen:keyLen+2]) != "\r\n" {
				t.Fatalf("request does not start with key CRLF: %q", b)
			}
			if got := hex.EncodeToString(b[keyLen+2:]); got != tc.want {
				t.Fatalf("request = %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := appendRequest(nil, &k, cmdConnect, flow.Addr{Name: strings.Repeat("a", 256), Port: 1}); err == nil {
		t.Error("a 256-byte name was accepted")
	}
	if _, err := appendRequest(nil, &k, cmdConnect, flow.Addr{}); err == nil {
		t.Error("an empty destination was accepted")
	}
}

func TestPacketFraming(t *testing.T) {
	dsts := []flow.Addr{
		{IP: netip.MustParseAddr("10.0.0.1"), Port: 53},
		{IP: netip.MustParseAddr("2001:db8::1"), Port: 5353},
		{Name: "dns.example", Port: 853},
	}
	var wire []byte
	var payloads [][]byte
	for i, d := range dsts {
		p := make([]byte, []int{0, 3000, 0xffff}[i])
		rand.Read(p)
		payloads = append(payloads, p)
		var err error
		if wire, err = appendPacket(wire, d, p); err != nil {
			t.Fatal(err)
		}
	}
	// The first frame by hand: ATYP addr port length CRLF payload.
	if got, want := hex.EncodeToString(wire[:11]), "010a000001"+"0035"+"0000"+"0d0a"; got != want {
		t.Fatalf("frame = %s, want %s", got, want)
	}
	r := bufio.NewReaderSize(bytes.NewReader(wire), 16)
	buf := make([]byte, 0xffff)
	for i, d := range dsts {
		n, from, err := readPacket(r, buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if from != d || !bytes.Equal(buf[:n], payloads[i]) {
			t.Fatalf("frame %d: from %v, %d bytes; want %v, %d", i, from, n, d, len(payloads[i]))
		}
	}
	if _, _, err := readPacket(r, buf); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	// A short buffer gets the head of the datagram; the stream stays in step.
	wire, _ = appendPacket(nil, dsts[0], []byte("0123456789"))
	wire, _ = appendPacket(wire, dsts[0], []byte("next"))
	r = bufio.NewReader(bytes.NewReader(wire))
	small := make([]byte, 4)
	if n, _, err := readPacket(r, small); err != nil || string(small[:n]) != "0123" {
		t.Fatalf("cut datagram: %q, %v", small[:n], err)
	}
	if n, _, err := readPacket(r, small); err != nil || string(small[:n]) != "next" {
		t.Fatalf("datagram after a cut one: %q, %v", small[:n], err)
	}
	if _, err := appendPacket(nil, dsts[0], make([]byte, 0x10000)); err == nil {
		t.Error("a 64 KiB datagram was framed")
	}
	for _, bad := range []string{"05", "0300", "010a000001003500000d0b"} {
		b, _ := hex.DecodeString(bad)
		if _, _, err := readPacket(bufio.NewReader(bytes.NewReader(b)), buf); err == nil {
			t.Errorf("frame %s: no error", bad)
		}
	}
}

// trojanServer is a Trojan server for the tests, written from the
// protocol document: it checks the key, parses the request and echoes TCP
// bytes or UDP frames (to the frame's own address).
type trojanServer struct {
	t    testing.TB
	addr netip.AddrPort
	key  [keyLen]byte

	mu   sync.Mutex
	dsts []flow.Addr
}

func startServer(t testing.TB, spec nettest.StreamSpec) *trojanServer {
	s := &trojanServer{t: t, key: key(testPassword)}
	s.addr, _ = nettest.StreamServer(t, spec, "trojan.test", s.serve)
	return s
}

func (s *trojanServer) serve(rw io.ReadWriter) {
	br := bufio.NewReader(rw)
	var k [keyLen + 3]byte
	if _, err := io.ReadFull(br, k[:]); err != nil || !bytes.Equal(k[:keyLen], s.key[:]) || string(k[keyLen:keyLen+2]) != "\r\n" {
		return // a real server serves its fallback site or closes
	}
	cmd := k[keyLen+2]
	// The destination: a frame header without length and payload.
	dst, err := readAddr(br)
	if err != nil {
		return
	}
	var crlf [2]byte
	if _, err := io.ReadFull(br, crlf[:]); err != nil || crlf != [2]byte{'\r', '\n'} {
		return
	}
	s.mu.Lock()
	s.dsts = append(s.dsts, dst)
	s.mu.Unlock()
	switch cmd {
	case cmdConnect:
		if dst.Port == 2222 { // server-first
			rw.Write([]byte("banner"))
		}
		io.Copy(rw, br)
	case cmdUDPAssociate:
		buf := make([]byte, maxPacket)
		for {
			n, from, err := readPacket(br, buf)
			if err != nil {
				return
			}
			out, _ := appendPacket(nil, from, buf[:n])
			if _, err := rw.Write(out); err != nil {
				return
			}
		}
	}
}

// readAddr reads ATYP addr port, reusing readPacket's decoding through a
// frame with no payload.
func readAddr(br *bufio.Reader) (flow.Addr, error) {
	atyp, err := br.ReadByte()
	if err != nil {
		return flow.Addr{}, err
	}
	n := map[byte]int{atypIPv4: 4 + 2, atypIPv6: 16 + 2}[atyp]
	head := []byte{atyp}
	if atyp == atypDomain {
		l, err := br.ReadByte()
		if err != nil {
			return flow.Addr{}, err
		}
		head = append(head, l)
		n = int(l) + 2
	}
	rest := make([]byte, n)
	if _, err := io.ReadFull(br, rest); err != nil {
		return flow.Addr{}, err
	}
	frame := append(append(head, rest...), 0, 0, '\r', '\n')
	_, a, err := readPacket(bufio.NewReader(bytes.NewReader(frame)), nil)
	return a, err
}

func (s *trojanServer) node(spec nettest.StreamSpec, password string) *node.Node {
	n := &node.Node{Name: "t", Protocol: node.Trojan, Server: s.addr.Addr().String(), Port: s.addr.Port(),
		Trojan: &node.TrojanOptions{Password: password}}
	if spec.TLS {
		n.TLS = &node.TLS{SNI: "trojan.test", Insecure: true}
	}
	if spec.WS {
		n.Transport = &node.Transport{Type: node.TransportWS, Path: spec.Path}
	}
	return n
}

var specs = []struct {
	name string
	spec nettest.StreamSpec
}{
	{"tls", nettest.StreamSpec{TLS: true}},
	{"ws+tls", nettest.StreamSpec{TLS: true, WS: true, Path: "/tr"}},
	{"tcp", nettest.StreamSpec{}},
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
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

func TestStreamEcho(t *testing.T) {
	for _, sp := range specs {
		t.Run(sp.name, func(t *testing.T) {
			s := startServer(t, sp.spec)
			c := newClient(t, s.node(sp.spec, testPassword))
			dst := flow.Addr{Name: "echo.example", Port: 7}
			conn, err := c.DialContext(ctxT(t), "tcp", dst)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			data := make([]byte, 1<<20)
			rand.Read(data)
			go func() {
				for off := 0; off < len(data); off += 60 << 10 {
					conn.Write(data[off:min(off+60<<10, len(data))])
				}
			}()
			got := make([]byte, len(data))
			if _, err := io.ReadFull(conn, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("echo differs")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.dsts) != 1 || s.dsts[0] != dst {
				t.Fatalf("server saw %v, want [%v]", s.dsts, dst)
			}
		})
	}
}

func TestServerFirst(t *testing.T) {
	s := startServer(t, specs[0].spec)
	c := newClient(t, s.node(specs[0].spec, testPassword))
	conn, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "smtp.example", Port: 2222})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 6)
	if _, err := io.ReadFull(conn, b); err != nil || string(b) != "banner" {
		t.Fatalf("banner: %q, %v", b, err)
	}
}

func TestPacket(t *testing.T) {
	for _, sp := range specs[:2] {
		t.Run(sp.name, func(t *testing.T) {
			s := startServer(t, sp.spec)
			c := newClient(t, s.node(sp.spec, testPassword))
			first := flow.Addr{IP: netip.MustParseAddr("10.1.1.1"), Port: 53}
			pc, err := c.ListenPacket(ctxT(t), first)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			pc.SetDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 0xffff)
			for i, dst := range []flow.Addr{first, {Name: "other.example", Port: 443}, first} {
				p := make([]byte, []int{3000, 100, 0xffff}[i])
				rand.Read(p)
				if _, err := pc.WriteTo(p, dst); err != nil {
					t.Fatal(err)
				}
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					t.Fatal(err)
				}
				if from.(flow.Addr) != dst || !bytes.Equal(buf[:n], p) {
					t.Fatalf("datagram %d: from %v, %d bytes; want %v, %d", i, from, n, dst, len(p))
				}
			}
		})
	}
}

func TestWrongPassword(t *testing.T) {
	s := startServer(t, specs[0].spec)
	c := newClient(t, s.node(specs[0].spec, "wrong"))
	conn, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "echo.example", Port: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	conn.Write([]byte("hello"))
	b, err := io.ReadAll(conn)
	if len(b) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("refused stream: %d bytes, %v; want its end, at once", len(b), err)
	}
}

func TestNew(t *testing.T) {
	base := func() *node.Node {
		return &node.Node{Name: "n", Protocol: node.Trojan, Server: "127.0.0.1", Port: 443,
			TLS: &node.TLS{}, Trojan: &node.TrojanOptions{Password: "secret-pw"}}
	}
	for _, tc := range []struct {
		name string
		mod  func(*node.Node)
		want string
	}{
		{"tcp http header", func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportTCP, HeaderType: "http"} }, `tcp header type "http" is not supported yet`},
		{"reality bad key", func(n *node.Node) { n.TLS.Reality = &node.Reality{PublicKey: "x"} }, "reality: public key"},
		{"empty password", func(n *node.Node) { n.Trojan.Password = "" }, "empty password"},
		{"bad pin", func(n *node.Node) { n.TLS.PinSHA256 = "zz" }, "pinSHA256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.mod(n)
			_, err := New(n, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret-pw") {
				t.Fatal("error shows the password")
			}
		})
	}
	c, err := New(base(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestClientClose(t *testing.T) {
	s := startServer(t, specs[0].spec)
	c := newClient(t, s.node(specs[0].spec, testPassword))
	conn, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "echo.example", Port: 7})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a stream of a closed client succeeded")
	}
	if _, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "echo.example", Port: 7}); err == nil {
		t.Fatal("dial on a closed client succeeded")
	}
}
