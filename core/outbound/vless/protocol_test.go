package vless

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound/internal/udpstreams"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "-", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppendRequest(t *testing.T) {
	id, _ := node.ParseUUID("b831381d-6324-4d53-ad4f-8cda48b30811")
	const uid = "b831381d63244d53ad4f8cda48b30811"
	tests := []struct {
		name string
		flow string
		cmd  byte
		dst  flow.Addr
		want string
	}{
		{"ipv4", "", cmdTCP, flow.AddrFromAddrPort(netip.MustParseAddrPort("1.2.3.4:443")),
			"00" + uid + "00 01 01bb 01 01020304"},
		{"ipv6 udp", "", cmdUDP, flow.AddrFromAddrPort(netip.MustParseAddrPort("[2001:db8::1]:53")),
			"00" + uid + "00 02 0035 03 20010db8000000000000000000000001"},
		{"domain", "", cmdTCP, flow.NameAddr("example.com", 80),
			"00" + uid + "00 01 0050 02 0b 6578616d706c652e636f6d"},
		{"mapped v4 is v4", "", cmdTCP, flow.NameAddr("::ffff:10.0.0.1", 8080),
			"00" + uid + "00 01 1f90 01 0a000001"},
		{"flow addon", "xtls-rprx-vision", cmdTCP, flow.NameAddr("a.b", 1),
			"00" + uid + "12 0a10 78746c732d727072782d766973696f6e 01 0001 02 03 612e62"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendRequest(nil, &id, tt.flow, tt.cmd, tt.dst)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustHex(t, tt.want); !bytes.Equal(got, want) {
				t.Fatalf("got  %x\nwant %x", got, want)
			}
		})
	}
	if _, err := appendRequest(nil, &id, "", cmdTCP, flow.Addr{Port: 1}); err == nil {
		t.Error("no address: want an error")
	}
	if _, err := appendRequest(nil, &id, "", cmdTCP, flow.NameAddr(strings.Repeat("a", 256), 1)); err == nil {
		t.Error("256-byte name: want an error")
	}
}

func TestReadResponse(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		rest string // bytes left after the header
	}{
		{"0000", true, ""},
		{"0000 6869", true, "6869"},
		{"0003 0a0178 ff", true, "ff"},
		{"0100", false, ""},
		{"00", false, ""},
		{"0005 0a01", false, ""},
		{"", false, ""},
	}
	for _, tt := range tests {
		r := bytes.NewReader(mustHex(t, tt.in))
		err := readResponse(r)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.in, err)
			continue
		}
		if rest, _ := io.ReadAll(r); tt.ok && !bytes.Equal(rest, mustHex(t, tt.rest)) {
			t.Errorf("%s: left %x", tt.in, rest)
		}
	}
}

func TestPacketFraming(t *testing.T) {
	var stream []byte
	sizes := []int{0, 1, 100, 3000, maxPacket}
	for _, n := range sizes {
		var err error
		stream, err = appendPacket(stream, bytes.Repeat([]byte{byte(n)}, n))
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(stream[:2+2+1], []byte{0, 0, 0, 1, 1}) {
		t.Fatalf("framing: %x", stream[:5])
	}
	r := bytes.NewReader(stream)
	var hdr [2]byte
	buf := make([]byte, maxPacket)
	for _, want := range sizes {
		n, err := udpstreams.ReadFramed(r, &hdr, buf)
		if err != nil || n != want || !bytes.Equal(buf[:n], bytes.Repeat([]byte{byte(want)}, want)) {
			t.Fatalf("packet of %d: got %d, %v", want, n, err)
		}
	}
	if _, err := udpstreams.ReadFramed(r, &hdr, buf); err != io.EOF {
		t.Fatalf("at end: %v", err)
	}
	if _, err := appendPacket(nil, make([]byte, maxPacket+1)); err == nil {
		t.Fatal("oversized datagram: want an error")
	}
	if _, err := udpstreams.ReadFramed(bytes.NewReader([]byte{0, 5, 1, 2}), &hdr, buf); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := udpstreams.ReadFramed(bytes.NewReader([]byte{0, 5, 1, 2, 3, 4, 5}), &hdr, buf[:4]); err == nil {
		t.Fatal("datagram larger than the buffer: want an error")
	}
}

func FuzzReadResponse(f *testing.F) {
	f.Add([]byte{0, 0})
	f.Add([]byte{0, 3, 10, 1, 'x', 'y'})
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		if err := readResponse(r); err == nil {
			if b[0] != 0 || len(b) < 2+int(b[1]) || r.Len() != len(b)-2-int(b[1]) {
				t.Fatalf("accepted %x, left %d", b, r.Len())
			}
		}
	})
}

func FuzzReadPacket(f *testing.F) {
	f.Add([]byte{0, 2, 'h', 'i', 0, 0})
	f.Add([]byte{0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		var hdr [2]byte
		buf := make([]byte, 1500)
		total := 0
		for {
			n, err := udpstreams.ReadFramed(r, &hdr, buf)
			if err != nil {
				break
			}
			total += 2 + n
			if !bytes.Equal(buf[:n], b[total-n:total]) {
				t.Fatalf("payload mismatch at %d", total)
			}
		}
		if total > len(b) {
			t.Fatalf("consumed %d of %d", total, len(b))
		}
	})
}
