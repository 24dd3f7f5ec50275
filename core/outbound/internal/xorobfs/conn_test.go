package xorobfs

import (
	"bytes"
	"encoding/hex"
	"net"
	"testing"
	"time"

	"crypto/sha256"

	"golang.org/x/crypto/blake2b"
)

// TestSalamanderKnownAnswer checks one packet against the specification's
// formula, computed independently (Python's hashlib.blake2b, digest_size 32,
// over psk || salt).
func TestSalamanderKnownAnswer(t *testing.T) {
	psk := []byte("test-psk")
	salt := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	payload := []byte("hello hysteria2 salamander! 0123456789abcdefghij") // 48 bytes: the key repeats
	want, _ := hex.DecodeString("01020304050607089b3a58b982173da51503d0a8e5311c7fa46e5c8ea201506fcf71773e743f2d7ec76a02e2d50e34be0513d0bceb384735")

	s := Salamander.New(psk)
	got := make([]byte, len(payload)+Salamander.SaltLen)
	n := s.Obfuscate(got, payload, salt)
	if !bytes.Equal(got[:n], want) {
		t.Fatalf("obfuscated\n% x\nwant\n% x", got[:n], want)
	}

	// The same from the formula with x/crypto directly.
	key := blake2b.Sum256(append(append([]byte{}, psk...), salt...))
	for i := range payload {
		if got[8+i] != payload[i]^key[i%32] {
			t.Fatalf("byte %d is not payload XOR hash", i)
		}
	}

	back := make([]byte, len(payload))
	if m := Salamander.New(psk).Deobfuscate(back, want); m != len(payload) || !bytes.Equal(back, payload) {
		t.Fatalf("deobfuscated %q (%d)", back[:max(m, 0)], m)
	}
}

// schemes are the obfuscations the tests run over.
var schemes = []Scheme{Salamander, XPlus}

// TestXPlusKnownAnswer checks xplus against its formula with crypto/sha256
// directly: a 16-byte salt, then the packet XOR SHA-256(key || salt).
func TestXPlusKnownAnswer(t *testing.T) {
	psk := []byte("xplus-key")
	salt := []byte("0123456789abcdef")
	payload := []byte("hello hysteria v1 xplus, longer than one 32-byte key block")
	got := make([]byte, len(payload)+16)
	if n := XPlus.New(psk).Obfuscate(got, payload, salt); n != len(got) {
		t.Fatalf("obfuscated to %d bytes, want %d", n, len(got))
	}
	if !bytes.Equal(got[:16], salt) {
		t.Fatalf("salt % x, want % x", got[:16], salt)
	}
	key := sha256.Sum256(append(append([]byte{}, psk...), salt...))
	for i := range payload {
		if got[16+i] != payload[i]^key[i%32] {
			t.Fatalf("byte %d is not payload XOR hash", i)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, sc := range schemes {
		t.Run(sc.Name, func(t *testing.T) { testRoundTrip(t, sc) })
	}
}

func testRoundTrip(t *testing.T, sc Scheme) {
	tests := []struct {
		name string
		size int
	}{
		{"one byte", 1},
		{"key length", 32},
		{"QUIC packet", 1252},
		{"large", 9000},
	}
	enc, dec := sc.New([]byte("pw")), sc.New([]byte("pw"))
	salt := bytes.Repeat([]byte("s"), sc.SaltLen)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := make([]byte, tt.size)
			for i := range p {
				p[i] = byte(i)
			}
			wire := make([]byte, tt.size+sc.SaltLen)
			enc.Obfuscate(wire, p, salt)
			if bytes.Equal(wire[sc.SaltLen:], p) {
				t.Fatal("payload not obfuscated")
			}
			out := make([]byte, tt.size)
			if n := dec.Deobfuscate(out, wire); n != tt.size || !bytes.Equal(out, p) {
				t.Fatalf("round trip failed (%d bytes)", n)
			}
		})
	}
	if n := dec.Deobfuscate(make([]byte, 10), salt); n != -1 {
		t.Fatalf("salt-only packet gave %d, want -1 (dropped)", n)
	}
}

// TestConn sends packets between two wrapped loopback sockets,
// checks they are obfuscated on the wire, and that the path allocates
// nothing per packet.
func TestConn(t *testing.T) {
	for _, sc := range schemes {
		t.Run(sc.Name, func(t *testing.T) { testConn(t, sc) })
	}
}

// listen opens a loopback UDP socket that t's end closes.
func listen(t *testing.T) *net.UDPConn {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testConn(t *testing.T, sc Scheme) {
	ua, ub, raw := listen(t), listen(t), listen(t)
	a, b := newConn(ua, sc, "pw"), newConn(ub, sc, "pw")
	msg := []byte("a QUIC packet, pretend")

	if _, err := a.WriteTo(msg, raw.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2000)
	raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _, err := raw.ReadFrom(buf)
	if err != nil || n != len(msg)+sc.SaltLen || bytes.Contains(buf[:n], msg) {
		t.Fatalf("on the wire: %d bytes, %v, plain=%v", n, err, bytes.Contains(buf[:n], msg))
	}

	// A packet too short to carry a salt is skipped, the next is read.
	raw.WriteTo([]byte("short"), ub.LocalAddr())
	a.WriteTo(msg, ub.LocalAddr())
	b.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, from, err := b.ReadFrom(buf)
	if err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if from.String() != ua.LocalAddr().String() {
		t.Fatalf("from %v, want %v", from, ua.LocalAddr())
	}

	allocs := testing.AllocsPerRun(200, func() {
		if _, err := a.WriteTo(msg, ub.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.ReadFrom(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%.1f allocations per packet, want 0", allocs)
	}
}

func BenchmarkSalamanderObfuscate(b *testing.B) {
	s := Salamander.New([]byte("benchmark-password"))
	p := make([]byte, 1252)
	dst := make([]byte, len(p)+8)
	salt := []byte("12345678")
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		s.Obfuscate(dst, p, salt)
	}
}

// FuzzDeobfuscate deobfuscates arbitrary packets: never a panic or a
// length beyond the buffer, a packet too short for a salt is refused, and
// obfuscating the result with the packet's salt gives the packet back.
func FuzzDeobfuscate(f *testing.F) {
	f.Add([]byte("psk"), []byte{1, 2, 3, 4, 5, 6, 7, 8, 'q', 'u', 'i', 'c'}, uint16(2048))
	f.Add([]byte(""), []byte{1, 2, 3, 4, 5, 6, 7, 8}, uint16(2048))
	f.Add([]byte("psk"), bytes.Repeat([]byte{0xaa}, 1500), uint16(100))
	f.Fuzz(func(t *testing.T, psk, pkt []byte, dstLen uint16) {
		for _, sc := range schemes {
			fuzzDeobfuscate(t, sc, psk, pkt, dstLen)
		}
	})
}

func fuzzDeobfuscate(t *testing.T, sc Scheme, psk, pkt []byte, dstLen uint16) {
	salt := sc.SaltLen
	dst := make([]byte, dstLen)
	n := sc.New(psk).Deobfuscate(dst, pkt)
	if len(pkt) <= salt {
		if n != -1 {
			t.Fatalf("%s: %d-byte packet deobfuscated to %d bytes", sc.Name, len(pkt), n)
		}
		return
	}
	if n != min(len(pkt)-salt, len(dst)) {
		t.Fatalf("%s: %d-byte packet into %d bytes: %d", sc.Name, len(pkt), len(dst), n)
	}
	back := make([]byte, n+salt)
	m := sc.New(psk).Obfuscate(back, dst[:n], pkt[:salt])
	if !bytes.Equal(back[:m], pkt[:m]) {
		t.Fatalf("%s: round trip differs", sc.Name)
	}
}

// TestWrap: without a password a socket is left plain (a datagram arrives
// as sent); with one it is obfuscated (the datagram arrives salted and
// longer by the salt).
func TestWrap(t *testing.T) {
	for _, sc := range schemes {
		for _, tt := range []struct {
			password string
			extra    int // bytes the wire adds to a datagram
		}{{"", 0}, {"pw", sc.SaltLen}} {
			t.Run(sc.Name+"/"+tt.password, func(t *testing.T) {
				peer := listen(t)
				pc := sc.Wrap(listen(t), tt.password)
				msg := []byte("a QUIC packet, pretend")
				if _, err := pc.WriteTo(msg, peer.LocalAddr()); err != nil {
					t.Fatal(err)
				}
				peer.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 1500)
				n, _, err := peer.ReadFrom(buf)
				if err != nil {
					t.Fatal(err)
				}
				if n != len(msg)+tt.extra || bytes.Equal(buf[tt.extra:n], msg) != (tt.password == "") {
					t.Fatalf("wire got %d bytes %q, want %d bytes, plain %v", n, buf[:n], len(msg)+tt.extra, tt.password == "")
				}
			})
		}
	}
}
