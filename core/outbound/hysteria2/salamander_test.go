package hysteria2

import (
	"bytes"
	"encoding/hex"
	"net"
	"testing"
	"time"

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

	s := newSalamander(psk)
	got := make([]byte, len(payload)+salamanderSaltLen)
	n := s.obfuscate(got, payload, salt)
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
	if m := newSalamander(psk).deobfuscate(back, want); m != len(payload) || !bytes.Equal(back, payload) {
		t.Fatalf("deobfuscated %q (%d)", back[:max(m, 0)], m)
	}
}

func TestSalamanderRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		size int
	}{
		{"one byte", 1},
		{"key length", 32},
		{"QUIC packet", 1252},
		{"large", 9000},
	}
	enc, dec := newSalamander([]byte("pw")), newSalamander([]byte("pw"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := make([]byte, tt.size)
			for i := range p {
				p[i] = byte(i)
			}
			wire := make([]byte, tt.size+8)
			enc.obfuscate(wire, p, []byte("saltsalt"))
			if bytes.Equal(wire[8:], p) {
				t.Fatal("payload not obfuscated")
			}
			out := make([]byte, tt.size)
			if n := dec.deobfuscate(out, wire); n != tt.size || !bytes.Equal(out, p) {
				t.Fatalf("round trip failed (%d bytes)", n)
			}
		})
	}
	if n := dec.deobfuscate(make([]byte, 10), []byte("12345678")); n != -1 {
		t.Fatalf("salt-only packet gave %d, want -1 (dropped)", n)
	}
}

// TestSalamanderConn sends packets between two wrapped loopback sockets,
// checks they are obfuscated on the wire, and that the path allocates
// nothing per packet.
func TestSalamanderConn(t *testing.T) {
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ua, ub, raw := listen(), listen(), listen()
	a, b := newSalamanderConn(ua, "pw"), newSalamanderConn(ub, "pw")
	msg := []byte("a QUIC packet, pretend")

	if _, err := a.WriteTo(msg, raw.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2000)
	raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _, err := raw.ReadFrom(buf)
	if err != nil || n != len(msg)+8 || bytes.Contains(buf[:n], msg) {
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
	s := newSalamander([]byte("benchmark-password"))
	p := make([]byte, 1252)
	dst := make([]byte, len(p)+8)
	salt := []byte("12345678")
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		s.obfuscate(dst, p, salt)
	}
}

// FuzzSalamander deobfuscates arbitrary packets: never a panic or a
// length beyond the buffer, a packet too short for a salt is refused, and
// obfuscating the result with the packet's salt gives the packet back.
func FuzzSalamander(f *testing.F) {
	f.Add([]byte("psk"), []byte{1, 2, 3, 4, 5, 6, 7, 8, 'q', 'u', 'i', 'c'}, uint16(2048))
	f.Add([]byte(""), []byte{1, 2, 3, 4, 5, 6, 7, 8}, uint16(2048))
	f.Add([]byte("psk"), bytes.Repeat([]byte{0xaa}, 1500), uint16(100))
	f.Fuzz(func(t *testing.T, psk, pkt []byte, dstLen uint16) {
		dst := make([]byte, dstLen)
		n := newSalamander(psk).deobfuscate(dst, pkt)
		if len(pkt) <= salamanderSaltLen {
			if n != -1 {
				t.Fatalf("%d-byte packet deobfuscated to %d bytes", len(pkt), n)
			}
			return
		}
		if n != min(len(pkt)-salamanderSaltLen, len(dst)) {
			t.Fatalf("%d-byte packet into %d bytes: %d", len(pkt), len(dst), n)
		}
		back := make([]byte, n+salamanderSaltLen)
		m := newSalamander(psk).obfuscate(back, dst[:n], pkt[:salamanderSaltLen])
		if !bytes.Equal(back[:m], pkt[:m]) {
			t.Fatalf("round trip differs")
		}
	})
}
