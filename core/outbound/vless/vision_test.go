package vless

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/muxcool"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/internal/nettest"
)

var testID = UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// block is one Vision block as a server writes it.
func block(first bool, cmd byte, content []byte, pad int) []byte {
	var b []byte
	if first {
		b = append(b, testID[:]...)
	}
	b = append(b, cmd, byte(len(content)>>8), byte(len(content)), byte(pad>>8), byte(pad))
	b = append(b, content...)
	return append(b, make([]byte, pad)...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// decodeAll runs the decoder over in, cut into reads of step bytes, and
// returns what it gave, its final state and the bytes it did not take.
func decodeAll(t testing.TB, in []byte, step int) (out []byte, state int, rest []byte, err error) {
	d := visionDecoder{uuid: testID}
	for len(in) > 0 {
		n := min(step, len(in))
		chunk := in[:n]
		used, o, err := d.decode(chunk, nil)
		out = append(out, o...)
		if err != nil {
			return out, d.state, nil, err
		}
		if d.state == vsDirect {
			return out, d.state, append(chunk[used:], in[n:]...), nil
		}
		if used != n {
			t.Fatalf("decoder took %d of %d bytes without switching to direct", used, n)
		}
		in = in[n:]
	}
	return out, d.state, nil, nil
}

func TestVisionDecode(t *testing.T) {
	resp := []byte{0, 0}
	tests := []struct {
		name      string
		in        []byte
		want      []byte
		wantState int
		wantRest  []byte
		wantErr   bool
	}{
		{"blocks then plain", cat(resp, block(true, visionContinue, []byte("hello "), 300), block(false, visionEnd, []byte("world"), 0), []byte(" after")),
			[]byte("\x00\x00hello world after"), vsPlain, nil, false},
		{"direct", cat(resp, block(true, visionDirect, []byte("tls"), 7), []byte("raw bytes")),
			[]byte("\x00\x00tls"), vsDirect, []byte("raw bytes"), false},
		{"empty blocks", cat(resp, block(true, visionContinue, nil, 0), block(false, visionEnd, nil, 0), []byte("x")),
			[]byte("\x00\x00x"), vsPlain, nil, false},
		{"no blocks", cat(resp, []byte("plain data that is not the uuid")), []byte("\x00\x00plain data that is not the uuid"), vsPlain, nil, false},
		{"uuid prefix then other", cat(resp, testID[:5], []byte("zz")), cat(resp, testID[:5], []byte("zz")), vsPlain, nil, false},
		{"addons pass", cat([]byte{0, 3, 9, 9, 9}, block(true, visionEnd, []byte("a"), 1)), []byte("\x00\x03\x09\x09\x09a"), vsPlain, nil, false},
		{"bad version", []byte{1, 0}, nil, 0, nil, true},
		{"bad command", cat(resp, block(true, 7, nil, 0)), nil, 0, nil, true},
	}
	for _, tt := range tests {
		for _, step := range []int{1, 3, 17, 1 << 20} {
			out, state, rest, err := decodeAll(t, tt.in, step)
			if tt.wantErr {
				if err == nil {
					t.Errorf("%s/%d: no error", tt.name, step)
				}
				continue
			}
			if err != nil || !bytes.Equal(out, tt.want) || state != tt.wantState || !bytes.Equal(rest, tt.wantRest) {
				t.Errorf("%s/%d: %q state %d rest %q err %v; want %q state %d rest %q", tt.name, step, out, state, rest, err, tt.want, tt.wantState, tt.wantRest)
			}
		}
	}
}

// FuzzVisionDecode: any input decodes without panicking, and the same
// whichever way the reads cut it.
func FuzzVisionDecode(f *testing.F) {
	f.Add(cat([]byte{0, 0}, block(true, visionContinue, []byte("hello"), 9), block(false, visionDirect, []byte("x"), 0), []byte("raw")), uint8(3))
	f.Add([]byte{0, 1, 2}, uint8(1))
	f.Add(cat([]byte{0, 0}, testID[:]), uint8(5))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		out1, st1, rest1, err1 := decodeAll(t, in, len(in)+1)
		out2, st2, rest2, err2 := decodeAll(t, in, int(step)+1)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		// A UUID that the input cuts short stays unresolved in one
		// reading and not the other only at the very end.
		if st1 != st2 && !(st1 == vsUUID || st2 == vsUUID) {
			t.Fatalf("states differ: %d / %d", st1, st2)
		}
		if st1 == st2 && (!bytes.Equal(out1, out2) || !bytes.Equal(rest1, rest2)) {
			t.Fatalf("outputs differ: %q %q / %q %q", out1, rest1, out2, rest2)
		}
	})
}

// decodeInPlaceAll runs decodeInPlace over in, cut into reads of step
// bytes each copied into a read buffer as the outer TLS would, and returns
// what Read would give (c.out included) and the rest after command 2.
func decodeInPlaceAll(in []byte, step int) (out []byte, state int, rest []byte, err error) {
	c := &visionConn{st: visionState{left: visionFilterPackets}, dec: visionDecoder{uuid: testID}}
	buf := make([]byte, step)
	for len(in) > 0 {
		n := copy(buf, in)
		in = in[n:]
		m, r, err := c.decodeInPlace(buf[:n])
		if err != nil {
			return out, c.dec.state, nil, err
		}
		out = append(append(out, buf[:m]...), c.out...)
		c.out = nil
		if c.dec.state == vsDirect {
			return out, c.dec.state, append(append([]byte(nil), r...), in...), nil
		}
		if len(r) != 0 {
			return out, c.dec.state, nil, fmt.Errorf("%d bytes left over without command 2", len(r))
		}
	}
	return out, c.dec.state, nil, nil
}

// TestVisionDecodeInPlace: decoding in the read buffer gives what decoding
// aside does, however the reads cut the stream, a UUID cut across reads
// that turns out to be data included.
func TestVisionDecodeInPlace(t *testing.T) {
	resp := []byte{0, 0}
	for _, in := range [][]byte{
		cat(resp, block(true, visionContinue, []byte("hello "), 300), block(false, visionEnd, []byte("world"), 0), []byte(" after")),
		cat(resp, block(true, visionContinue, bytes.Repeat([]byte("x"), 5000), 900), block(false, visionDirect, []byte("tls"), 7), []byte("raw bytes")),
		cat(resp, testID[:15], []byte("not the uuid after all")),
		cat([]byte{0, 3, 9, 9, 9}, testID[:7], []byte("zz")),
		cat(resp, []byte("plain data that is not the uuid")),
	} {
		for _, step := range []int{1, 2, 3, 7, 17, 100, 1 << 16} {
			want, wst, wrest, werr := decodeAll(t, in, step)
			got, gst, grest, gerr := decodeInPlaceAll(in, step)
			if (werr == nil) != (gerr == nil) || werr == nil && (wst != gst || !bytes.Equal(got, want) || !bytes.Equal(grest, wrest)) {
				t.Errorf("%q/%d: in place %q state %d rest %q err %v; aside %q state %d rest %q err %v", in, step, got, gst, grest, gerr, want, wst, wrest, werr)
			}
		}
	}
}

// FuzzVisionDecodeInPlace: decoding in the read buffer gives what decoding
// aside does.
func FuzzVisionDecodeInPlace(f *testing.F) {
	f.Add(cat([]byte{0, 0}, block(true, visionContinue, []byte("hello"), 9), block(false, visionDirect, []byte("x"), 0), []byte("raw")), uint8(3))
	f.Add(cat([]byte{0, 0}, testID[:9], []byte("data")), uint8(4))
	f.Add(cat([]byte{0, 1, 7}, testID[:], []byte{0, 0, 2, 0, 1, 'h', 'i', 0}, []byte("more")), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		want, wst, wrest, werr := decodeAll(t, in, int(step)+1)
		got, gst, grest, gerr := decodeInPlaceAll(in, int(step)+1)
		if (werr == nil) != (gerr == nil) || werr == nil && (wst != gst || !bytes.Equal(got, want) || !bytes.Equal(grest, wrest)) {
			t.Fatalf("in place %q state %d rest %q err %v; aside %q state %d rest %q err %v", got, gst, grest, gerr, want, wst, wrest, werr)
		}
	})
}

func TestVisionInspect(t *testing.T) {
	// A TLS 1.3 ServerHello: record, handshake header, version, random,
	// session id (32), cipher suite, compression, extensions.
	sh := []byte{0x16, 3, 3, 0, 0, 2, 0, 0, 0, 3, 3}
	sh = append(sh, make([]byte, 32)...)
	sh = append(sh, 32)
	sh = append(sh, make([]byte, 32)...)
	sh13 := append(append([]byte{}, sh...), 0x13, 0x01, 0, 0, 6)
	sh13 = append(sh13, tls13SupportedVersions...)
	ccm := append(append([]byte{}, sh...), 0x13, 0x05, 0, 0, 6)
	ccm = append(ccm, tls13SupportedVersions...)
	sh12 := append(append([]byte{}, sh...), 0xc0, 0x2f, 0, 0, 0)
	ch := []byte{0x16, 3, 1, 0, 0, 1, 0}
	for _, tc := range []struct {
		name               string
		pkts               [][]byte
		isTLS, tls12, xtls bool
	}{
		{"tls13", [][]byte{ch, sh13}, true, true, true},
		{"ccm8", [][]byte{ch, ccm}, true, true, false},
		{"tls12", [][]byte{ch, sh12}, true, true, false},
		{"not tls", [][]byte{[]byte("GET / HTTP/1.1\r\n"), []byte("HTTP/1.1 200 OK")}, false, false, false},
		{"late hello", [][]byte{{1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, sh13}, false, false, false},
		{"short", [][]byte{{0x16, 3, 3, 0, 0, 2}}, true, true, false},
	} {
		s := visionState{left: visionFilterPackets}
		for _, p := range tc.pkts {
			s.inspect(p)
		}
		isTLS, tls12, xtls, _ := s.get()
		if isTLS != tc.isTLS || tls12 != tc.tls12 || xtls != tc.xtls {
			t.Errorf("%s: tls %v, 1.2+ %v, xtls %v", tc.name, isTLS, tls12, xtls)
		}
	}
}

// visionPair is a visionConn over TLS to a server whose handler gets the
// server's TLS connection.
func visionPair(t *testing.T, srv func(*tls.Conn)) *visionConn {
	t.Helper()
	cert, _ := nettest.SelfSigned(t, "vision.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	nettest.Serve(t, ln, func(c net.Conn) { srv(c.(*tls.Conn)) })
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tlsconf.Client(raw, &tls.Config{InsecureSkipVerify: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		t.Fatal(err)
	}
	c := newVisionConn(tc, testID, 3)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestVisionConnWrite: the request header goes unpadded, then blocks with
// the UUID first; a flow that shows no TLS ends its blocks with command 1
// after the first packets, and later writes pass unchanged.
func TestVisionConnWrite(t *testing.T) {
	got := make(chan []byte, 1)
	c := visionPair(t, func(s *tls.Conn) {
		b, _ := io.ReadAll(s)
		got <- b
	})
	writes := [][]byte{[]byte("HDRfirst"), []byte("second")}
	for i := 0; i < visionFilterPackets; i++ {
		writes = append(writes, []byte{byte('a' + i)})
	}
	writes = append(writes, []byte("after"))
	for _, w := range writes {
		if _, err := c.Write(w); err != nil {
			t.Fatal(err)
		}
	}
	c.tr.CloseWrite()
	b := <-got
	if !bytes.HasPrefix(b, []byte("HDR")) || !bytes.Equal(b[3:19], testID[:]) {
		t.Fatalf("stream starts %q", b[:min(len(b), 19)])
	}
	b = b[19:]
	var content []byte
	for {
		cmd, cl, pl := b[0], int(binary.BigEndian.Uint16(b[1:])), int(binary.BigEndian.Uint16(b[3:]))
		content = append(content, b[5:5+cl]...)
		b = b[5+cl+pl:]
		if cmd == visionEnd {
			break
		}
		if cmd != visionContinue {
			t.Fatalf("command %d", cmd)
		}
	}
	if !bytes.HasSuffix(b, []byte("after")) {
		t.Fatalf("after the blocks: %q", b)
	}
	want := bytes.Join(writes[:len(writes)-1], nil)[3:]
	if got := append(content, b[:len(b)-len("after")]...); !bytes.Equal(got, want) {
		t.Fatalf("content %q, want %q", got, want)
	}
}

// TestVisionConnDirectRead: after the server's command 2 the reader takes
// the bytes the outer TLS had buffered and then the socket, raw.
func TestVisionConnDirectRead(t *testing.T) {
	c := visionPair(t, func(s *tls.Conn) {
		s.Write(cat([]byte{0, 0}, block(true, visionDirect, []byte("inner-tls "), 40)))
		// Raw on the socket from here: written under TLS's own conn.
		raw := s.NetConn()
		raw.Write([]byte("raw one "))
		time.Sleep(50 * time.Millisecond)
		raw.Write([]byte("raw two"))
		raw.Close()
	})
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "\x00\x00inner-tls raw one raw two" {
		t.Fatalf("read %q", b)
	}
}

func TestXUDPFrames(t *testing.T) {
	var gid [8]byte
	dsts := []flow.Addr{
		flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53")),
		flow.AddrFromAddrPort(netip.MustParseAddrPort("[2001:db8::1]:443")),
		flow.NameAddr("example.com", 8080),
	}
	for i, dst := range dsts {
		p := bytes.Repeat([]byte{byte(i)}, 3000)
		frame, err := appendXUDP(nil, dst, p, i == 0, &gid)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 65535)
		var meta [maxMuxMeta]byte
		n, from, deliver, err := readXUDP(bytes.NewReader(frame), meta[:], buf)
		if err != nil || !deliver || from != dst || !bytes.Equal(buf[:n], p) {
			t.Errorf("%v: %d bytes from %v deliver %v: %v", dst, n, from, deliver, err)
		}
	}
	var meta [maxMuxMeta]byte
	buf := make([]byte, 100)
	for _, tc := range []struct {
		name    string
		frame   []byte
		deliver bool
		err     bool
	}{
		{"keep-alive", []byte{0, 4, 0, 0, muxcool.StatusKeepAlive, muxcool.OptData, 0, 2, 'h', 'i'}, false, false},
		{"keep without address", []byte{0, 4, 0, 0, muxcool.StatusKeep, muxcool.OptData, 0, 1, 'x'}, true, false},
		{"end", []byte{0, 4, 0, 0, muxcool.StatusEnd, 0}, false, true},
		{"short metadata", []byte{0, 2, 0, 0}, false, true},
		{"unknown status", []byte{0, 4, 0, 0, 9, 0}, false, true},
		{"truncated data", []byte{0, 4, 0, 0, muxcool.StatusKeep, muxcool.OptData, 0, 9, 'x'}, false, true},
		{"bad address", []byte{0, 6, 0, 0, muxcool.StatusKeep, muxcool.OptData, muxcool.NetUDP, 0}, false, true},
		{"tcp source", []byte{0, 12, 0, 0, muxcool.StatusKeep, muxcool.OptData, muxcool.NetTCP, 0, 53, atypIPv4, 1, 2, 3, 4, 0, 1, 'x'}, false, true},
	} {
		_, _, deliver, err := readXUDP(bytes.NewReader(tc.frame), meta[:], buf)
		if deliver != tc.deliver || (err != nil) != tc.err {
			t.Errorf("%s: deliver %v, err %v", tc.name, deliver, err)
		}
	}
}

// FuzzReadXUDP: any frame reads without panicking; what it delivers fits
// the buffer.
func FuzzReadXUDP(f *testing.F) {
	var gid [8]byte
	frame, _ := appendXUDP(nil, flow.NameAddr("example.com", 53), []byte("query"), true, &gid)
	f.Add(frame)
	f.Add([]byte{0, 4, 0, 0, muxcool.StatusKeepAlive, muxcool.OptData, 0, 2, 'h', 'i'})
	f.Add([]byte{0, 9, 0, 0, muxcool.StatusKeep, muxcool.OptData, muxcool.NetUDP, 0, 53, atypIPv4, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, in []byte) {
		var meta [maxMuxMeta]byte
		buf := make([]byte, 512)
		r := bytes.NewReader(in)
		for range 64 {
			n, from, deliver, err := readXUDP(r, meta[:], buf)
			if err != nil {
				return
			}
			if n > len(buf) || (deliver && from.IsValid() && from.Port == 0 && from.IsName() && from.Name == "") {
				t.Fatalf("n %d from %v", n, from)
			}
		}
	})
}

// TestVisionBlocksStartRecords: a large write during padding goes as
// several blocks, each starting a TLS record (after the request header in
// the first), so that no block header is cut across records.
func TestVisionBlocksStartRecords(t *testing.T) {
	recs := make(chan [][]byte, 1)
	c := visionPair(t, func(s *tls.Conn) {
		var rs [][]byte
		for {
			b := make([]byte, 64<<10)
			n, err := s.Read(b) // one record's plaintext per Read
			if n > 0 {
				rs = append(rs, b[:n])
			}
			if err != nil {
				recs <- rs
				return
			}
		}
	})
	body := bytes.Repeat([]byte("0123456789abcdef"), 2<<10) // 32 KiB: four blocks
	if _, err := c.Write(append([]byte("HDR"), body...)); err != nil {
		t.Fatal(err)
	}
	c.tr.CloseWrite()
	rs := <-recs
	starts := map[int]bool{}
	stream := []byte{}
	for _, r := range rs {
		starts[len(stream)] = true
		stream = append(stream, r...)
	}
	at, blocks := 3+16, 0
	var content []byte
	for at < len(stream) {
		if at != 3+16 && !starts[at] {
			t.Fatalf("block %d starts at %d, inside a record", blocks, at)
		}
		cmd, cl, pl := stream[at], int(binary.BigEndian.Uint16(stream[at+1:])), int(binary.BigEndian.Uint16(stream[at+3:]))
		content = append(content, stream[at+5:at+5+cl]...)
		at += 5 + cl + pl
		blocks++
		if cmd != visionContinue {
			break
		}
	}
	if blocks != 5 || !bytes.Equal(content, body) {
		t.Fatalf("%d blocks, %d content bytes", blocks, len(content))
	}
}

// TestVisionConnWaitRead: a Vision flow waits for its next bytes without
// reading them, through the blocks and then on the socket after command 2.
func TestVisionConnWaitRead(t *testing.T) {
	next, stop := make(chan []byte), make(chan struct{})
	recv := func() []byte {
		select {
		case b := <-next:
			return b
		case <-stop:
			return nil
		}
	}
	c := visionPair(t, func(s *tls.Conn) {
		s.Write(cat([]byte{0, 0}, block(true, visionContinue, []byte("one "), 10)))
		recv()
		s.Write(block(false, visionDirect, []byte("two "), 10))
		raw := s.NetConn()
		raw.Write(recv())
		recv()
		raw.Close()
	})
	t.Cleanup(func() { close(stop) }) // before visionPair's: the server returns first
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	read := func(want string) {
		t.Helper()
		b := make([]byte, len(want))
		if _, err := io.ReadFull(c, b); err != nil || string(b) != want {
			t.Fatalf("read %q, %v; want %q", b, err, want)
		}
	}
	read("\x00\x00one ") // TLS can wait once a Read has come through
	w := nettest.StartWait(t, c.WaitRead)
	w.Blocked("before the next block")
	next <- nil
	w.Ends("command 2")
	read("two ")
	w = nettest.StartWait(t, c.WaitRead)
	w.Blocked("raw, before any bytes")
	next <- []byte("raw")
	w.Ends("raw bytes")
	read("raw")
	w = nettest.StartWait(t, c.WaitRead)
	w.Blocked("raw, after the bytes")
	next <- nil
	w.Ends("the socket's end")
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read at the end: %v, want EOF", err)
	}
}
