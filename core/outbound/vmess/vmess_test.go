package vmess

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"hash/fnv"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
	"github.com/skiffvpn/skiff/internal/nettest"
)

const testUUID = "b831381d-6324-4d53-ad4f-8cda48b30811"

func TestVectors(t *testing.T) {
	// The KDF's published test value (Xray proxy/vmess/aead kdf_test.go,
	// also the python vmess_aead package).
	got := kdf([]byte("Demo Key for KDF Value Test"), []byte("Demo Path for KDF Value Test"),
		[]byte("Demo Path for KDF Value Test2"), []byte("Demo Path for KDF Value Test3"))
	if h := hex.EncodeToString(got[:]); h != "53e9d7e1bd7bd25022b71ead07d8a596efc8a845c7888652fd684b4903dc8892" {
		t.Errorf("kdf = %s", h)
	}
	// Command key and ChaCha20 key derivations (swift-nio-proxies tests).
	id, _ := node.ParseUUID("450bae28-b9da-67d0-16bc-4918dc8d79b5")
	if ck := cmdKey(id); hex.EncodeToString(ck[:]) != "da8b7df4396329ebe7a74afc62a9e7c8" {
		t.Errorf("cmdKey = %x", ck)
	}
	var k [16]byte
	hex.Decode(k[:], []byte("96b727f438a60a07ca1f554ec689862e"))
	want, _ := hex.DecodeString("80c2c504eca628a44855d24e6a9478841d87e34a09027344ebf659d22fb2b88b")
	// Seal with the derived key and open with x/crypto keyed by want.
	a := newChacha(&k)
	ct := a.Seal(nil, make([]byte, 12), []byte("x"), nil)
	b, _ := chachaWithKey(want)
	if _, err := b.Open(nil, make([]byte, 12), ct, nil); err != nil {
		t.Errorf("chacha key is not MD5(k)||MD5(MD5(k)): %v", err)
	}
}

func TestAuthID(t *testing.T) {
	id, _ := node.ParseUUID(testUUID)
	ck := cmdKey(id)
	const ts = 1700000000
	a := authID(&ck, ts, [4]byte{1, 2, 3, 4})
	blk, _ := aes.NewCipher(kdf16(ck[:], []byte(labelAuthID)))
	var p [16]byte
	blk.Decrypt(p[:], a[:])
	if binary.BigEndian.Uint64(p[:]) != ts || !bytes.Equal(p[8:12], []byte{1, 2, 3, 4}) || binary.BigEndian.Uint32(p[12:]) != crc32.ChecksumIEEE(p[:12]) {
		t.Fatalf("auth id opens to %x", p)
	}
}

// vmessServer is a VMess AEAD server for the tests, written from the
// protocol description: it checks the auth id (time and CRC), opens the
// length and the header, checks the FNV checksum, answers with the response
// header and echoes chunks (TCP) or datagrams (UDP). users[0] is the only
// known user; others see the stream closed without a word.
type vmessServer struct {
	t    testing.TB
	ck   [16]byte
	addr netip.AddrPort

	mu   sync.Mutex
	reqs []serverReq
}

type serverReq struct {
	opt, sec, cmd byte
	dst           flow.Addr
}

func startServer(t testing.TB, spec nettest.StreamSpec) *vmessServer {
	id, _ := node.ParseUUID(testUUID)
	s := &vmessServer{t: t, ck: cmdKey(id)}
	s.addr, _ = nettest.StreamServer(t, spec, "vmess.test", s.serve)
	return s
}

func (s *vmessServer) serve(rw io.ReadWriter) {
	var h [16 + 18 + 8]byte
	if _, err := io.ReadFull(rw, h[:]); err != nil {
		return
	}
	var plainID [16]byte
	blk, _ := aes.NewCipher(kdf16(s.ck[:], []byte(labelAuthID)))
	blk.Decrypt(plainID[:], h[:16])
	ts := int64(binary.BigEndian.Uint64(plainID[:]))
	if crc32.ChecksumIEEE(plainID[:12]) != binary.BigEndian.Uint32(plainID[12:]) || time.Since(time.Unix(ts, 0)).Abs() > 120*time.Second {
		return
	}
	id, nonce := h[:16], h[34:42]
	lk := kdf16(s.ck[:], []byte(labelHeaderLenKey), id, nonce)
	ln := kdf(s.ck[:], []byte(labelHeaderLenIV), id, nonce)
	l, err := gcm(lk).Open(nil, ln[:12], h[16:34], id)
	if err != nil {
		return
	}
	sealed := make([]byte, int(binary.BigEndian.Uint16(l))+16)
	if _, err := io.ReadFull(rw, sealed); err != nil {
		return
	}
	hk := kdf16(s.ck[:], []byte(labelHeaderKey), id, nonce)
	hn := kdf(s.ck[:], []byte(labelHeaderIV), id, nonce)
	hdr, err := gcm(hk).Open(nil, hn[:12], sealed, id)
	if err != nil || len(hdr) < 41 || hdr[0] != 1 {
		return
	}
	f := fnv.New32a()
	f.Write(hdr[:len(hdr)-4])
	if f.Sum32() != binary.BigEndian.Uint32(hdr[len(hdr)-4:]) {
		s.t.Errorf("server: FNV checksum mismatch")
		return
	}
	var rq request
	copy(rq.iv[:], hdr[1:17])
	copy(rq.key[:], hdr[17:33])
	rq.v, rq.opt, rq.security, rq.cmd = hdr[33], hdr[34], hdr[35]&0x0f, hdr[37]
	padLen := int(hdr[35] >> 4)
	port := binary.BigEndian.Uint16(hdr[38:40])
	var dst flow.Addr
	a := hdr[41 : len(hdr)-4-padLen]
	switch hdr[40] {
	case atypIPv4:
		dst = flow.Addr{IP: netip.AddrFrom4([4]byte(a)), Port: port}
	case atypIPv6:
		dst = flow.Addr{IP: netip.AddrFrom16([16]byte(a)), Port: port}
	case atypDomain:
		dst = flow.Addr{Name: string(a[1:]), Port: port}
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, serverReq{opt: rq.opt, sec: rq.security, cmd: rq.cmd, dst: dst})
	s.mu.Unlock()

	// Response: sealed length, sealed header (V, no option, no command).
	rk, riv := respKeys(&rq)
	var out []byte
	k1 := kdf16(rk[:], []byte(labelRespLenKey))
	n1 := kdf(riv[:], []byte(labelRespLenIV))
	out = gcm(k1).Seal(out, n1[:12], []byte{0, 4}, nil)
	k2 := kdf16(rk[:], []byte(labelRespKey))
	n2 := kdf(riv[:], []byte(labelRespIV))
	out = gcm(k2).Seal(out, n2[:12], []byte{rq.v, 0, 0, 0}, nil)
	if _, err := rw.Write(out); err != nil {
		return
	}
	if rq.opt&optChunkStream == 0 { // zero: raw
		io.Copy(rw, rw)
		return
	}
	in := newBody(rq.security, rq.opt, &rq.key, &rq.iv)
	back := newBody(rq.security, rq.opt, &rk, &riv)
	buf := make([]byte, 0x10000)
	for {
		var sz [2]byte
		if _, err := io.ReadFull(rw, sz[:]); err != nil {
			return
		}
		size, pad, err := in.chunkSize(sz)
		if err != nil {
			s.t.Errorf("server: %v", err)
			return
		}
		if _, err := io.ReadFull(rw, buf[:size]); err != nil {
			return
		}
		end := size == in.overhead()+pad
		p, err := in.open(buf[:0], buf[:size-pad])
		if err != nil {
			s.t.Errorf("server: chunk does not open: %v", err)
			return
		}
		if _, err := rw.Write(back.seal(nil, p)); err != nil || end {
			return // an end chunk is echoed as the end chunk
		}
	}
}

func (s *vmessServer) node(spec nettest.StreamSpec, security string, padding bool) *node.Node {
	n := &node.Node{Name: "v", Protocol: node.VMess, Server: s.addr.Addr().String(), Port: s.addr.Port(),
		VMess: &node.VMessOptions{UUID: testUUID, Security: security, GlobalPadding: padding}}
	if spec.TLS {
		n.TLS = &node.TLS{SNI: "vmess.test", Insecure: true}
	}
	if spec.WS {
		n.Transport = &node.Transport{Type: node.TransportWS, Path: spec.Path}
	}
	return n
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

var specs = []struct {
	name string
	spec nettest.StreamSpec
}{
	{"tcp", nettest.StreamSpec{}},
	{"tls", nettest.StreamSpec{TLS: true}},
	{"ws+tls", nettest.StreamSpec{TLS: true, WS: true, Path: "/vm"}},
}

func TestStreamEcho(t *testing.T) {
	for _, sp := range specs {
		for _, sec := range []string{"auto", "aes-128-gcm", "chacha20-poly1305", "none", "zero"} {
			for _, pad := range []bool{false, true} {
				name := sp.name + "/" + sec
				if pad {
					name += "/padding"
				}
				t.Run(name, func(t *testing.T) {
					s := startServer(t, sp.spec)
					c := newClient(t, s.node(sp.spec, sec, pad))
					testEcho(t, c, 1<<20)
					s.mu.Lock()
					defer s.mu.Unlock()
					r := s.reqs[0]
					wantOpt := optChunkStream | optChunkMasking
					if pad && sec != "none" && sec != "zero" {
						wantOpt |= optGlobalPadding
					}
					if sec == "zero" {
						wantOpt = 0
					}
					if r.opt != wantOpt || r.cmd != cmdTCP || r.dst != (flow.Addr{Name: "echo.example", Port: 7}) {
						t.Fatalf("server saw %+v; want option %#x", r, wantOpt)
					}
				})
			}
		}
	}
}

// testEcho writes size random bytes in writes of varied sizes, half-closes
// and checks that the same bytes and then EOF come back.
func testEcho(t *testing.T, c *Client, size int) {
	conn, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "echo.example", Port: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	data := make([]byte, size)
	rand.Read(data)
	werr := make(chan error, 1)
	go func() {
		sizes := []int{1, 100, 16 << 10, 16<<10 + 1, 60 << 10, 200 << 10, 7}
		for off, i := 0, 0; off < len(data); i++ {
			n := min(sizes[i%len(sizes)], len(data)-off)
			if _, err := conn.Write(data[off : off+n]); err != nil {
				werr <- err
				return
			}
			off += n
		}
		if cw, ok := conn.(interface{ CloseWrite() error }); ok && !c.raw {
			werr <- cw.CloseWrite()
			return
		}
		werr <- nil
	}()
	got, err := io.ReadAll(io.LimitReader(conn, int64(size)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("echo differs (%d of %d bytes)", len(got), size)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if c.raw {
		return // no end marker to echo
	}
	if n, err := conn.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("after the echo: %d, %v; want the server's end chunk as EOF", n, err)
	}
}

func TestServerSpeaksAfterSilence(t *testing.T) {
	// A Read before any Write sends the header alone after reqconn.FirstWriteWait;
	// the response still arrives.
	s := startServer(t, specs[0].spec)
	c := newClient(t, s.node(specs[0].spec, "aes-128-gcm", false))
	conn, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "echo.example", Port: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	go func() {
		time.Sleep(3 * reqconn.FirstWriteWait)
		conn.Write([]byte("late"))
	}()
	b := make([]byte, 4)
	if _, err := io.ReadFull(conn, b); err != nil || string(b) != "late" {
		t.Fatalf("%q, %v", b, err)
	}
}

func TestPacket(t *testing.T) {
	for _, sp := range specs {
		for _, sec := range []string{"aes-128-gcm", "none", "zero"} {
			t.Run(sp.name+"/"+sec, func(t *testing.T) {
				s := startServer(t, sp.spec)
				c := newClient(t, s.node(sp.spec, sec, true))
				first := flow.Addr{IP: netip.MustParseAddr("10.1.1.1"), Port: 53}
				pc, err := c.ListenPacket(ctxT(t), first)
				if err != nil {
					t.Fatal(err)
				}
				defer pc.Close()
				pc.SetDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 0x10000)
				for i, dst := range []flow.Addr{first, {Name: "other.example", Port: 443}, first} {
					p := make([]byte, []int{3000, 1, maxDatagram}[i])
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
				if _, err := pc.WriteTo(make([]byte, maxDatagram+1), first); err == nil {
					t.Fatal("an oversized datagram was sent")
				}
				pc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				if _, _, err := pc.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("ReadFrom past its deadline: %v", err)
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				if len(s.reqs) != 2 || s.reqs[0].cmd != cmdUDP || s.reqs[0].opt&optChunkStream == 0 {
					t.Fatalf("server saw %+v; want two chunked UDP streams", s.reqs)
				}
			})
		}
	}
}

func TestWrongUser(t *testing.T) {
	s := startServer(t, specs[1].spec)
	n := s.node(specs[1].spec, "auto", false)
	n.VMess.UUID = "00000000-0000-4000-8000-000000000001"
	c := newClient(t, n)
	conn, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "echo.example", Port: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	conn.Write([]byte("hello"))
	_, err = conn.Read(make([]byte, 10))
	if err == nil || !strings.Contains(err.Error(), "without a response") || !strings.Contains(err.Error(), s.addr.String()) {
		t.Fatalf("read: %v; want the server's address and 'without a response'", err)
	}
	pc, err := c.ListenPacket(ctxT(t), flow.Addr{Name: "dns.example", Port: 53})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.SetDeadline(time.Now().Add(5 * time.Second))
	pc.WriteTo([]byte("q"), flow.Addr{Name: "dns.example", Port: 53})
	if _, _, err := pc.ReadFrom(make([]byte, 10)); err == nil || !strings.Contains(err.Error(), "without a response") {
		t.Fatalf("udp read: %v", err)
	}
}

func TestBadResponse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(rw io.ReadWriter)
		want  string
	}{
		{"garbage", func(rw io.ReadWriter) { rw.Write(bytes.Repeat([]byte{7}, 64)) }, "bad response header"},
		{"short", func(rw io.ReadWriter) { rw.Write([]byte{1, 2, 3}) }, "without a response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := nettest.StreamServer(t, nettest.StreamSpec{}, "x", func(rw io.ReadWriter) {
				io.ReadFull(rw, make([]byte, 42))
				tc.reply(rw)
			})
			c := newClient(t, &node.Node{Protocol: node.VMess, Server: "127.0.0.1", Port: addr.Port(), VMess: &node.VMessOptions{UUID: testUUID}})
			conn, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "a.example", Port: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			conn.Write([]byte("x"))
			if _, err := conn.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	base := func() *node.Node {
		return &node.Node{Name: "n", Protocol: node.VMess, Server: "127.0.0.1", Port: 443, VMess: &node.VMessOptions{UUID: testUUID}}
	}
	for _, tc := range []struct {
		name string
		mod  func(*node.Node)
		want string
	}{
		{"legacy", func(n *node.Node) { n.VMess.AlterID = 64 }, "alterId 64 is legacy VMess (MD5 authentication)"},
		{"auth length", func(n *node.Node) { n.VMess.AuthenticatedLength = true }, "authenticated length is not supported"},
		{"xudp", func(n *node.Node) { n.VMess.PacketEncoding = "xudp" }, `packet encoding "xudp" is not supported`},
		{"cfb", func(n *node.Node) { n.VMess.Security = "aes-128-cfb" }, `security "aes-128-cfb" is not supported`},
		{"tcp http header", func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportTCP, HeaderType: "http"} }, `tcp header type "http" is not supported yet`},
		{"bad uuid", func(n *node.Node) { n.VMess.UUID = "this is not a uuid at all, far too long" }, "uuid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.mod(n)
			_, err := New(n, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), testUUID) || strings.Contains(err.Error(), "far too long") {
				t.Fatal("error shows the user id")
			}
		})
	}
	c, err := New(base(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[bool]byte{true: secAES128GCM, false: secChacha20}[hasAESGCM()]; c.sec != want {
		t.Errorf("auto chose %d, want %d", c.sec, want)
	}
}

// discard is a transport that drops what is written and reads nothing.
type discard struct{ net.Conn }

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// replay is a transport whose reads return data again and again.
type replay struct {
	net.Conn
	data []byte
	off  int
}

func (r *replay) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

func testConn(tr net.Conn, sec byte) *conn {
	c := &Client{addr: "test"}
	rq := request{security: sec, opt: optChunkStream | optChunkMasking, cmd: cmdTCP}
	vc := newConn(tr, c, &rq, nil, false)
	vc.reqSent.Store(true)
	return vc
}

func TestHotPathAllocs(t *testing.T) {
	w := testConn(discard{}, secAES128GCM)
	for _, n := range []int{1, 4 << 10, maxChunkPayload, maxChunkPayload + 1, 60 << 10} {
		p := make([]byte, n)
		if a := testing.AllocsPerRun(50, func() { w.Write(p) }); a != 0 {
			t.Errorf("Write of %d bytes: %.1f allocations", n, a)
		}
	}
	p := make([]byte, 60<<10)
	// A stream of 60 KiB batches, as the server's direction would carry.
	r := testConn(nil, secAES128GCM)
	rk, riv := respKeys(&r.rq)
	enc := newBody(secAES128GCM, r.rq.opt, &rk, &riv)
	var wire []byte
	for range 64 {
		for i := 0; i < len(p); i += maxChunkPayload {
			wire = enc.seal(wire, p[i:min(i+maxChunkPayload, len(p))])
		}
	}
	r.Conn = &replay{data: wire}
	r.resp = true
	r.rbody = newBody(secAES128GCM, r.rq.opt, &r.rq.key, &r.rq.iv)
	r.rbody = newBody(secAES128GCM, r.rq.opt, &rk, &riv)
	buf := make([]byte, 60<<10)
	if a := testing.AllocsPerRun(50, func() {
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Read: %.1f allocations", a)
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, sec := range []byte{secAES128GCM, secChacha20} {
		b.Run(map[byte]string{secAES128GCM: "aes-128-gcm", secChacha20: "chacha20-poly1305"}[sec], func(b *testing.B) {
			w := testConn(discard{}, sec)
			p := make([]byte, 60<<10)
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				w.Write(p)
			}
		})
	}
}

func chachaWithKey(k []byte) (interface {
	Open(dst, nonce, ciphertext, ad []byte) ([]byte, error)
}, error) {
	return chacha20poly1305New(k)
}

// capCapture records the capacity of each buffer written to it.
type capCapture struct {
	discard
	caps []int
}

func (c *capCapture) Write(p []byte) (int, error) {
	c.caps = append(c.caps, cap(p))
	return len(p), nil
}

// TestBatchBuffers checks which batch buffer a write seals into: one chunk
// takes a small one (what a write waiting on its transport holds), more a
// large one, and neither grows.
func TestBatchBuffers(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		first bool // the request header goes with it
		want  int
	}{
		{"header alone", 0, true, smallBatchCap},
		{"small read", 4 << 10, false, smallBatchCap},
		{"medium read", maxChunkPayload, false, smallBatchCap},
		{"medium read with the header", maxChunkPayload, true, smallBatchCap},
		{"two chunks", maxChunkPayload + 1, false, largeBatchCap},
		{"large read", 60 << 10, false, largeBatchCap},
		{"large read with the header", 60 << 10, true, largeBatchCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &capCapture{}
			c := testConn(tr, secAES128GCM)
			if tt.first {
				c.req = make([]byte, 300)
				c.reqSent.Store(false)
				c.sent = make(chan struct{})
			}
			if _, err := c.Write(make([]byte, tt.n)); err != nil {
				t.Fatal(err)
			}
			if len(tr.caps) != 1 || tr.caps[0] != tt.want {
				t.Errorf("Write(%d bytes) wrote buffers of capacity %v, want one of %d", tt.n, tr.caps, tt.want)
			}
		})
	}
}

// A write deadline set on a session holds for the streams it dials later,
// as net.PacketConn promises for all future writes (a stream dialed after
// the deadline passed used to write anyway).
func TestPacketWriteDeadlineReachesNewStreams(t *testing.T) {
	sp := specs[0]
	s := startServer(t, sp.spec)
	c := newClient(t, s.node(sp.spec, "aes-128-gcm", false))
	first := flow.Addr{IP: netip.MustParseAddr("10.1.1.1"), Port: 53}
	pc, err := c.ListenPacket(ctxT(t), first)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := pc.WriteTo([]byte("late"), first); err == nil {
		t.Fatal("a write past the deadline went out on the first stream")
	}
	if _, err := pc.WriteTo([]byte("late"), flow.Addr{Name: "other.example", Port: 443}); err == nil {
		t.Fatal("a write past the deadline went out on a stream dialed after it was set")
	}
}
