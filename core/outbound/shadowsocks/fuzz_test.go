package shadowsocks

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound/internal/muxcool"
	"github.com/skiffvpn/skiff/internal/nettest"
)

func FuzzParseAddr(f *testing.F) {
	for _, a := range []flow.Addr{testDst, flow.NameAddr("1.2.3.4", 80), flow.NameAddr("::1", 53)} {
		b, _ := appendAddr(nil, a)
		f.Add(b)
	}
	f.Add([]byte{3, 0, 0, 0})
	f.Add([]byte{9})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, n, err := parseAddr(b)
		if err != nil {
			return
		}
		if n > len(b) || !a.IsValid() {
			t.Fatalf("n %d of %d, addr %v", n, len(b), a)
		}
	})
}

func FuzzParseFixedResponse(f *testing.F) {
	salt := bytes.Repeat([]byte{7}, 16)
	now := time.Unix(1_800_000_000, 0)
	good := []byte{1}
	good = binary.BigEndian.AppendUint64(good, uint64(now.Unix()))
	good = append(good, salt...)
	good = append(good, 0, 5)
	f.Add(good)
	f.Add(good[:10])
	f.Add(append([]byte{0}, good[1:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseFixedResponse(b, salt, now)
		if err == nil && (n <= 0 || n > 0xffff || !bytes.Equal(b[9:25], salt)) {
			t.Fatalf("accepted %x: length %d", b, n)
		}
	})
}

func FuzzParseUDPResponseBody(f *testing.F) {
	session := []byte("sessionX")
	now := time.Unix(1_800_000_000, 0)
	good := []byte{1}
	good = binary.BigEndian.AppendUint64(good, uint64(now.Unix()))
	good = append(good, session...)
	good = append(good, 0, 2, 0, 0)
	good, _ = appendAddr(good, testDst)
	good = append(good, "payload"...)
	f.Add(good)
	f.Add(good[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		src, off, err := parseUDPResponseBody(b, session, now)
		if err == nil && (off > len(b) || !src.IsValid()) {
			t.Fatalf("accepted %x: offset %d, source %v", b, off, src)
		}
	})
}

// FuzzChunkReader feeds the client a response stream built from the input
// (chunk sizes from its bytes), with one byte flipped where the input says,
// or a raw stream, arriving in steps, read by Read, TryRead and Lend in
// turns:
// the reader returns the sent data or an error, never more, and never
// panics.
func FuzzChunkReader(f *testing.F) {
	f.Add([]byte("hello, world"), uint32(0), false)
	f.Add(bytes.Repeat([]byte{0xff}, 3000), uint32(40), false)
	f.Add(bytes.Repeat([]byte{1}, 100), uint32(1<<31), false)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint32(0), true)
	// Chunks larger than the read buffer (16 bytes): opened into pend.
	f.Add(bytes.Repeat([]byte{0xfe}, 20000), uint32(62), false)
	// Chunks smaller than the read buffer (16 KiB), arriving 2 KiB at a time.
	f.Add(bytes.Repeat([]byte{0xfd}, 50000), uint32(16<<12|2000<<3), false)
	// Empty chunks between the others.
	f.Add(bytes.Repeat([]byte{0xfc}, 5000), uint32(1<<30|9<<3), false)
	s, pw := newTestServer(f, "2022-blake3-aes-128-gcm", false)
	f.Fuzz(func(t *testing.T, data []byte, flip uint32, raw bool) {
		c, err := New(&node.Node{Protocol: node.Shadowsocks, Server: "127.0.0.1", Port: 1,
			Shadowsocks: &node.ShadowsocksOptions{Method: s.method, Password: pw}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ac := &nettest.Arrivals{End: io.EOF}
		sent := &ac.Sent
		resp := new(bytes.Buffer)
		sc := newStreamConn(ac, c, testDst)
		if _, err := sc.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if raw {
			resp.Write(data)
		} else {
			rsalt := bytes.Repeat([]byte{byte(flip)}, 16)
			out := newCodec(s.sessionAEAD(rsalt))
			first := min(len(data), 1+int(flip%64))
			hdr := []byte{1}
			hdr = binary.BigEndian.AppendUint64(hdr, uint64(time.Now().Unix()))
			hdr = append(hdr, sent.Bytes()[:16]...)
			hdr = binary.BigEndian.AppendUint16(hdr, uint16(first))
			resp.Write(rsalt)
			resp.Write(out.seal(hdr))
			resp.Write(out.seal(data[:first]))
			for rest := data[first:]; len(rest) > 0; {
				n := min(len(rest), 1+int(rest[0])*7)
				if flip&(1<<30) != 0 {
					// An empty chunk before each, as sing-box's server
					// writes on multiplexed streams.
					resp.Write(out.chunk(nil))
				}
				resp.Write(out.chunk(rest[:n]))
				rest = rest[n:]
			}
			if b := resp.Bytes(); flip&1 == 1 && len(b) > 0 {
				b[int(flip>>1)%len(b)] ^= 0x40
			}
		}
		// The bytes arrive in steps; Reads (which may wait for the next
		// step) and TryReads (which never do) take turns, into a buffer
		// of a size of its own.
		ac.Every(resp.Bytes(), 1+int(flip>>3)%3000)
		buf := make([]byte, 1+int(flip>>2)%(70<<10))
		var got []byte
		err = nil
		for i := 0; err == nil; i++ {
			if i > 1<<20 {
				t.Fatal("reads neither ended nor failed")
			}
			if i%3 == 2 {
				// A relay's Lend, asking for more than its buffer.
				got = append(got, sc.Lend(len(buf))...)
				continue
			}
			if i%3 == 1 {
				if len(ac.Later) > 0 {
					ac.Arrive()
				}
				n, terr := sc.TryRead(buf)
				if terr != nil {
					t.Fatalf("TryRead: %v", terr)
				}
				got = append(got, buf[:n]...)
				continue
			}
			var n int
			n, err = sc.Read(buf)
			got = append(got, buf[:n]...)
		}
		if err == io.EOF {
			err = nil
		}
		if err == nil && !raw && !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes without error, sent %d, and they differ", len(got), len(data))
		}
		if !bytes.HasPrefix(data, got) && !raw {
			t.Fatalf("read bytes that were not sent")
		}
	})
}

// FuzzUDPOpen hands each method's packet decoder arbitrary packets.
func FuzzUDPOpen(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef0123456789abcdef"), uint8(0))
	f.Add(make([]byte, 100), uint8(2))
	var conns []*packetConn
	for _, tm := range testMethods {
		s, pw := newTestServer(f, tm.name, tm.multiUser)
		c, err := New(&node.Node{Protocol: node.Shadowsocks, Server: "127.0.0.1", Port: 1,
			Shadowsocks: &node.ShadowsocksOptions{Method: s.method, Password: pw}}, nil)
		if err != nil {
			f.Fatal(err)
		}
		conns = append(conns, newPacketConn(c, nil))
	}
	f.Fuzz(func(t *testing.T, pkt []byte, which uint8) {
		p := conns[int(which)%len(conns)]
		p.rmu.Lock()
		defer p.rmu.Unlock()
		src, payload, err := p.open(append([]byte(nil), pkt...), time.Now())
		if err == nil && (!src.IsValid() || len(payload) > len(pkt)) {
			t.Fatalf("accepted a forged packet")
		}
	})
}

// FuzzMuxReader reads arbitrary Mux.Cool frames.
func FuzzMuxReader(f *testing.F) {
	frame := func(status, opt byte, data string) []byte {
		b, _ := appendMuxMeta(nil, status, opt, testDst)
		if opt&muxcool.OptData != 0 {
			b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
			b = append(b, data...)
		}
		return b
	}
	f.Add(append(frame(muxcool.StatusKeep, muxcool.OptData, "hello"), frame(muxcool.StatusEnd, 0, "")...))
	f.Add(frame(muxcool.StatusKeepAlive, muxcool.OptData, "ignored"))
	f.Add([]byte{0, 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := newMuxConn(&memConn{w: io.Discard, r: bytes.NewReader(b)}, testDst)
		got, _ := io.ReadAll(m)
		if len(got) > len(b) {
			t.Fatalf("read %d bytes out of %d", len(got), len(b))
		}
	})
}

// FuzzObfsReaders reads arbitrary server bytes through both obfs-local
// disguises.
func FuzzObfsReaders(f *testing.F) {
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\ndata"), false)
	f.Add([]byte{0x16, 3, 1, 0, 1, 0, 0x14, 3, 3, 0, 1, 1, 0x16, 3, 3, 0, 2, 'h', 'i', 0x17, 3, 3, 0, 1, '!'}, true)
	f.Add([]byte{0x17, 3, 3, 0xff, 0xff}, true)
	f.Fuzz(func(t *testing.T, b []byte, tlsMode bool) {
		var c net.Conn = &memConn{w: io.Discard, r: bytes.NewReader(b)}
		if tlsMode {
			c = newObfsTLSConn(c, "example.com")
		} else {
			c = newObfsHTTPConn(c, &obfsConfig{host: "example.com", uri: "/"})
		}
		got, _ := io.ReadAll(c)
		if len(got) > len(b) {
			t.Fatalf("read %d bytes out of %d", len(got), len(b))
		}
	})
}

// TestEmptyChunks: a server's empty chunks (a length of 0 and a tag, as
// sing-box's writes on multiplexed streams) are skipped, not refused.
func TestEmptyChunks(t *testing.T) {
	s, pw := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	c, err := New(&node.Node{Protocol: node.Shadowsocks, Server: "127.0.0.1", Port: 1,
		Shadowsocks: &node.ShadowsocksOptions{Method: s.method, Password: pw}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ac := &nettest.Arrivals{End: io.EOF}
	sc := newStreamConn(ac, c, testDst)
	if _, err := sc.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	rsalt := bytes.Repeat([]byte{7}, 16)
	out := newCodec(s.sessionAEAD(rsalt))
	hdr := []byte{1}
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(time.Now().Unix()))
	hdr = append(hdr, ac.Sent.Bytes()[:16]...)
	hdr = binary.BigEndian.AppendUint16(hdr, 4)
	resp := new(bytes.Buffer)
	resp.Write(rsalt)
	resp.Write(out.seal(hdr))
	resp.Write(out.seal([]byte("zero")))
	want := []byte("zero one, two, three")
	for _, w := range bytes.SplitAfter(want[4:], []byte(" ")) {
		resp.Write(out.chunk(nil))
		resp.Write(out.chunk(w))
	}
	resp.Write(out.chunk(nil))
	ac.Every(resp.Bytes(), 5)
	got, err := io.ReadAll(sc)
	if err != nil {
		t.Fatalf("read: %v (after %q)", err, got)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
}
