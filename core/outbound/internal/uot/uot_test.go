package uot

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

func TestFrames(t *testing.T) {
	dsts := []flow.Addr{
		flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53")),
		flow.AddrFromAddrPort(netip.MustParseAddrPort("[2001:db8::1]:443")),
		flow.NameAddr("example.com", 3478),
	}
	var stream []byte
	for i, d := range dsts {
		var err error
		if stream, err = AppendFrame(stream, d, bytes.Repeat([]byte{byte(i)}, 100*i)); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	for i, d := range dsts {
		p := make([]byte, 2048)
		n, from, err := ReadFrame(r, p)
		if err != nil || from != d || n != 100*i || !bytes.Equal(p[:n], bytes.Repeat([]byte{byte(i)}, n)) {
			t.Fatalf("frame %d: %d bytes from %v, %v; want %d from %v", i, n, from, err, 100*i, d)
		}
	}
	if _, _, err := ReadFrame(r, make([]byte, 10)); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	ok, _ := AppendFrame(nil, flow.NameAddr("example.com", 53), []byte("hello"))
	for _, tc := range []struct {
		name string
		in   []byte
		want error // nil: any error
	}{
		{"unknown type", []byte{7, 0, 0}, ErrFrame},
		{"empty name", []byte{2, 0, 0, 53, 0, 0}, ErrFrame},
		{"cut in the address", ok[:5], io.ErrUnexpectedEOF},
		{"cut in the data", ok[:len(ok)-1], io.ErrUnexpectedEOF},
		{"type only", []byte{2}, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadFrame(bufio.NewReader(bytes.NewReader(tc.in)), make([]byte, 64))
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestReadFrameCut: a datagram longer than the buffer is cut, and the
// next frame is still read.
func TestReadFrameCut(t *testing.T) {
	d := flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53"))
	b, _ := AppendFrame(nil, d, bytes.Repeat([]byte{1}, 3000))
	b, _ = AppendFrame(b, d, []byte("next"))
	r := bufio.NewReaderSize(bytes.NewReader(b), 16)
	p := make([]byte, 100)
	if n, _, err := ReadFrame(r, p); n != 100 || err != nil {
		t.Fatalf("first: %d, %v", n, err)
	}
	if n, _, err := ReadFrame(r, p); err != nil || string(p[:n]) != "next" {
		t.Fatalf("second: %q, %v", p[:n], err)
	}
}

func TestRequest(t *testing.T) {
	d := flow.NameAddr("example.com", 53)
	if b, _ := AppendRequest(nil, 1, d); len(b) != 0 {
		t.Fatalf("version 1 request %x, want none", b)
	}
	b, err := AppendRequest(nil, 2, d)
	want := append([]byte{0, 3, 11}, "example.com\x00\x35"...)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("version 2 request %x, %v; want %x", b, err, want)
	}
	if _, err := Magic(3); err == nil {
		t.Fatal("Magic(3) did not fail")
	}
}

// TestPacketConn: the request rides with the first datagram only, and
// replies come back with their sources.
func TestPacketConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	d1 := flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53"))
	d2 := flow.NameAddr("example.com", 443)
	pc, err := NewPacketConn(a, 2, d1, "test: UDP via server")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 2)
	go func() {
		buf := make([]byte, 4096)
		for range 2 {
			n, err := b.Read(buf)
			if err != nil {
				return
			}
			got <- append([]byte(nil), buf[:n]...)
		}
	}()
	if _, err := pc.WriteTo([]byte("one"), d1); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.WriteTo([]byte("two"), d2); err != nil {
		t.Fatal(err)
	}
	req, _ := AppendRequest(nil, 2, d1)
	w1, _ := AppendFrame(req, d1, []byte("one"))
	w2, _ := AppendFrame(nil, d2, []byte("two"))
	for i, w := range [][]byte{w1, w2} {
		if g := <-got; !bytes.Equal(g, w) {
			t.Fatalf("write %d: %x, want %x", i, g, w)
		}
	}
	reply, _ := AppendFrame(nil, d2, []byte("back"))
	go b.Write(reply)
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	p := make([]byte, 100)
	n, from, err := pc.ReadFrom(p)
	if err != nil || string(p[:n]) != "back" || from.String() != d2.String() {
		t.Fatalf("ReadFrom: %q from %v, %v", p[:n], from, err)
	}
	if _, err := pc.WriteTo(make([]byte, MaxDatagram+1), d1); err == nil || !strings.Contains(err.Error(), "test: UDP via server") {
		t.Fatalf("oversized datagram: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 192, 0, 2, 1, 0, 53, 0, 2, 'h', 'i'})
	f.Add([]byte{1, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0xbb, 0, 0})
	f.Add([]byte{2, 3, 'a', '.', 'b', 0, 53, 0xff, 0xff})
	f.Add([]byte{2, 0})
	f.Add([]byte{9})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		p := make([]byte, 512)
		for range 4 {
			n, from, err := ReadFrame(r, p)
			if err != nil {
				return
			}
			if n > len(p) || !from.IsValid() {
				t.Fatalf("%d bytes from %v", n, from)
			}
			// What was read writes back to a frame that reads the same.
			w, err := AppendFrame(nil, from, p[:n])
			if err != nil {
				t.Fatalf("AppendFrame(%v): %v", from, err)
			}
			n2, from2, err := ReadFrame(bufio.NewReader(bytes.NewReader(w)), make([]byte, 512))
			if err != nil || n2 != n || from2 != from {
				t.Fatalf("re-read: %d from %v, %v; want %d from %v", n2, from2, err, n, from)
			}
		}
	})
}
