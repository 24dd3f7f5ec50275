package tuic

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

func TestPacketRoundTrip(t *testing.T) {
	for _, dst := range []flow.Addr{
		flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53")),
		flow.AddrFromAddrPort(netip.MustParseAddrPort("[2001:db8::1]:443")),
		flow.NameAddr("example.com", 8080),
	} {
		raw, err := appendAddr(nil, dst)
		if err != nil {
			t.Fatal(err)
		}
		in := packet{Assoc: 7, PacketID: 9, FragTotal: 3, FragID: 2, Addr: dst, Payload: []byte("hello")}
		b := append(appendPacketHeader(nil, &in, raw), in.Payload...)
		var out packet
		if err := parsePacket(b, &out); err != nil {
			t.Fatalf("%s: %v", dst, err)
		}
		if out.Assoc != 7 || out.PacketID != 9 || out.FragTotal != 3 || out.FragID != 2 || out.Addr != dst || !bytes.Equal(out.Payload, in.Payload) {
			t.Errorf("%s: got %+v", dst, out)
		}
	}
}

func TestParsePacketRefuses(t *testing.T) {
	good := append(appendPacketHeader(nil, &packet{FragTotal: 1, Payload: []byte("ab")}, []byte{addrIPv4, 1, 2, 3, 4, 0, 53}), "ab"...)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, errShortPacket},
		{"heartbeat", heartbeat, errNotPacket},
		{"version 4", append([]byte{4}, good[1:]...), errNotPacket},
		{"size too large", good[:len(good)-1], errSizeLie},
		{"size too small", append(good[:len(good):len(good)], 'c'), errSizeLie},
		{"fragment id past total", func() []byte { b := bytes.Clone(good); b[7] = 1; return b }(), errBadFragment},
		{"zero total", func() []byte { b := bytes.Clone(good); b[6] = 0; return b }(), errBadFragment},
	}
	for _, tt := range tests {
		var p packet
		if err := parsePacket(tt.b, &p); err != tt.want {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
		}
	}
	var p packet
	if err := parsePacket(good, &p); err != nil {
		t.Fatalf("good packet: %v", err)
	}
	// The None address (later fragments) parses as no address.
	none := append(appendPacketHeader(nil, &packet{FragTotal: 2, FragID: 1, Payload: []byte("x")}, []byte{addrNone}), 'x')
	if err := parsePacket(none, &p); err != nil || p.Addr.IsValid() {
		t.Fatalf("None address: %v, %v", err, p.Addr)
	}
}

// TestFragmentsReassemble cuts a datagram as WriteTo does and feeds the
// fragments, out of order, to a session's reassembly.
func TestFragmentsReassemble(t *testing.T) {
	dst := flow.NameAddr("example.com", 53)
	raw, _ := appendAddr(nil, dst)
	payload := bytes.Repeat([]byte("0123456789"), 400)
	chunk, count, err := quicconn.FragmentPlan(packetHeaderFixed+len(raw), len(payload), 1200)
	if err != nil {
		t.Fatal(err)
	}
	var wire [][]byte
	for i := range count {
		f := packet{Assoc: 1, PacketID: 5, FragTotal: uint8(count), FragID: uint8(i), Payload: payload[i*chunk : min((i+1)*chunk, len(payload))]}
		b := append(appendPacketHeader(nil, &f, raw), f.Payload...)
		if len(b) > 1200 {
			t.Fatalf("fragment %d is %d bytes", i, len(b))
		}
		wire = append(wire, b)
	}
	pc := &packetConn{PacketQueue: quicconn.NewPacketQueue(nil, quicconn.Sender{})}
	for i := len(wire) - 1; i >= 0; i-- {
		var p packet
		if err := parsePacket(wire[i], &p); err != nil {
			t.Fatal(err)
		}
		pc.deliver(&p)
	}
	buf := make([]byte, 65535)
	n, from, err := pc.ReadFrom(buf)
	if err != nil || !bytes.Equal(buf[:n], payload) || from.(flow.Addr) != dst {
		t.Fatalf("reassembled %d bytes from %v (%v)", n, from, err)
	}
}

func FuzzParsePacket(f *testing.F) {
	raw, _ := appendAddr(nil, flow.NameAddr("example.com", 53))
	f.Add(append(appendPacketHeader(nil, &packet{FragTotal: 1, Payload: []byte("ab")}, raw), "ab"...))
	f.Add(append(appendPacketHeader(nil, &packet{FragTotal: 2, FragID: 1, Payload: []byte("x")}, []byte{addrNone}), 'x'))
	f.Add(append(appendPacketHeader(nil, &packet{FragTotal: 1}, []byte{addrIPv6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 187}), []byte{}...))
	f.Add(heartbeat)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p packet
		if err := parsePacket(b, &p); err != nil {
			return
		}
		if p.FragID >= p.FragTotal || len(p.Payload) != p.Size {
			t.Fatalf("accepted %+v", p)
		}
		// What parses re-encodes to the same bytes (the address may be
		// written differently for a name that is an IP literal or has
		// trailing dots, or an IPv4-mapped IPv6 address, read as IPv4).
		if typ := b[packetHeaderFixed]; typ == addrIPv4 || typ == addrIPv6 && p.Addr.IP.Is6() {
			raw, err := appendAddr(nil, p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			if again := append(appendPacketHeader(nil, &p, raw), p.Payload...); !bytes.Equal(again, b) {
				t.Fatalf("re-encoded %x, was %x", again, b)
			}
		}
		// A session's reassembly takes whatever parses.
		pc := &packetConn{PacketQueue: quicconn.NewPacketQueue(nil, quicconn.Sender{})}
		pc.deliver(&p)
	})
}
