package hysteria2

import (
	"bytes"
	"errors"
	"testing"

	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// cut splits a datagram into messages the way WriteTo does.
func cut(t *testing.T, payload []byte, maxSize int, packetID uint16) []udpMessage {
	t.Helper()
	m := udpMessage{SessionID: 7, FragCount: 1, Addr: []byte("10.0.0.1:53"), Payload: payload}
	chunk, count, err := quicconn.FragmentPlan(m.headerLen(), len(payload), maxSize)
	if err != nil {
		t.Fatal(err)
	}
	var out []udpMessage
	for i := range count {
		f := fragment(&m, packetID, chunk, count, i)
		if enc := appendUDPMessage(nil, &f); len(enc) > maxSize {
			t.Fatalf("fragment %d encodes to %d bytes, over %d", i, len(enc), maxSize)
		}
		// Go through the wire format, as the receiver does.
		var p udpMessage
		if err := parseUDPMessage(appendUDPMessage(nil, &f), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestFragmentPlan(t *testing.T) {
	tests := []struct {
		header, payload, max int
		chunk, count         int
		err                  error
	}{
		{20, 100, 1200, 1180, 1, nil},
		{20, 3000, 1200, 1180, 3, nil},
		{20, 2360, 1200, 1180, 2, nil},
		{20, 0, 1200, 1180, 1, nil},
		{20, 255 * 10, 30, 10, 255, nil},
		{20, 255*10 + 1, 30, 0, 0, quicconn.ErrTooManyFragments},
		{20, 5, 20, 0, 0, quicconn.ErrTooManyFragments},
	}
	for _, tt := range tests {
		chunk, count, err := quicconn.FragmentPlan(tt.header, tt.payload, tt.max)
		if !errors.Is(err, tt.err) || (err == nil && (chunk != tt.chunk || count != tt.count)) {
			t.Errorf("plan(%d,%d,%d) = %d,%d,%v; want %d,%d,%v", tt.header, tt.payload, tt.max, chunk, count, err, tt.chunk, tt.count, tt.err)
		}
	}
}

func TestDefrag(t *testing.T) {
	payload := make([]byte, 3000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	frags := cut(t, payload, 1200, 42)
	if len(frags) != 3 {
		t.Fatalf("%d fragments, want 3", len(frags))
	}
	other := cut(t, []byte("next datagram, whole"), 1200, 0)[0]
	tests := []struct {
		name  string
		order []udpMessage
		want  [][]byte // datagrams delivered, in order
	}{
		{"in order", []udpMessage{frags[0], frags[1], frags[2]}, [][]byte{payload}},
		{"out of order", []udpMessage{frags[2], frags[0], frags[1]}, [][]byte{payload}},
		{"duplicate fragment", []udpMessage{frags[1], frags[1], frags[0], frags[2]}, [][]byte{payload}},
		{"missing fragment", []udpMessage{frags[0], frags[2]}, nil},
		{"unfragmented passes through", []udpMessage{other}, [][]byte{other.Payload}},
		{"unfragmented between fragments", []udpMessage{frags[0], other, frags[1], frags[2]}, [][]byte{other.Payload, payload}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d defragger
			var got [][]byte
			for i := range tt.order {
				if p, ok := d.feed(&tt.order[i]); ok {
					got = append(got, p)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("delivered %d datagrams, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.want[i]) {
					t.Fatalf("datagram %d differs", i)
				}
			}
		})
	}
}

func TestDefragDropsIncompleteOnNewPacket(t *testing.T) {
	a := cut(t, bytes.Repeat([]byte{'a'}, 2500), 1200, 1)
	b := cut(t, bytes.Repeat([]byte{'b'}, 2500), 1200, 2)
	var d defragger
	// a's last fragment comes late, after b started: a is dropped, b is
	// delivered, and the stray fragment of a does not complete anything.
	seq := []udpMessage{a[0], a[1], b[0], b[1], b[2], a[2]}
	var got [][]byte
	for i := range seq {
		if p, ok := d.feed(&seq[i]); ok {
			got = append(got, p)
		}
	}
	if len(got) != 1 || !bytes.Equal(got[0], bytes.Repeat([]byte{'b'}, 2500)) {
		t.Fatalf("got %d datagrams, want only b", len(got))
	}
}

// TestDefragSizeCap reassembles datagrams around the largest UDP payload:
// up to quicconn.MaxUDPPacket bytes they are delivered, one byte more drops them.
func TestDefragSizeCap(t *testing.T) {
	for _, tc := range []struct {
		size int
		ok   bool
	}{{0, true}, {1, true}, {quicconn.MaxUDPPacket - 1, true}, {quicconn.MaxUDPPacket, true}, {quicconn.MaxUDPPacket + 1, false}} {
		// Fragments of 1200 bytes, so that even 0 and 1 bytes go as two
		// fragments (an empty last one) through the reassembly.
		payload := bytes.Repeat([]byte{'x'}, tc.size)
		n := max(2, (tc.size+1199)/1200)
		var d defragger
		var got []byte
		delivered := 0
		for i := range n {
			lo, hi := min(i*1200, tc.size), min((i+1)*1200, tc.size)
			m := udpMessage{PacketID: 5, FragID: uint8(i), FragCount: uint8(n), Payload: payload[lo:hi]}
			if p, ok := d.feed(&m); ok {
				got = p
				delivered++
			}
		}
		if tc.ok && (delivered != 1 || !bytes.Equal(got, payload)) {
			t.Errorf("%d bytes: delivered %d datagrams (%d bytes), want the one", tc.size, delivered, len(got))
		}
		if !tc.ok && delivered != 0 {
			t.Errorf("%d bytes: delivered %d datagrams, want none", tc.size, delivered)
		}
		// Truncated: the last fragment never comes.
		var d2 defragger
		for i := range n - 1 {
			lo, hi := min(i*1200, tc.size), min((i+1)*1200, tc.size)
			m := udpMessage{PacketID: 5, FragID: uint8(i), FragCount: uint8(n), Payload: payload[lo:hi]}
			if _, ok := d2.feed(&m); ok {
				t.Errorf("%d bytes: delivered without its last fragment", tc.size)
			}
		}
	}
}

// FuzzDefrag feeds a run of arbitrary UDP messages (each prefixed by a
// length byte pair) to one session's defragmenter: it must never panic,
// never deliver more than a UDP datagram holds, and pass an unfragmented
// message through as it is.
func FuzzDefrag(f *testing.F) {
	msg := func(m udpMessage) []byte {
		b := appendUDPMessage(nil, &m)
		return append([]byte{byte(len(b) >> 8), byte(len(b))}, b...)
	}
	frag := func(id, count uint8, p string) []byte {
		return msg(udpMessage{PacketID: 3, FragID: id, FragCount: count, Addr: []byte("1.1.1.1:53"), Payload: []byte(p)})
	}
	f.Add(bytes.Join([][]byte{frag(0, 2, "ab"), frag(1, 2, "cd")}, nil))
	f.Add(bytes.Join([][]byte{frag(1, 3, "b"), frag(1, 3, "b"), frag(0, 3, "a"), frag(2, 3, "")}, nil))
	f.Add(bytes.Join([][]byte{frag(0, 2, "a"), frag(0, 1, "whole"), frag(1, 2, "b")}, nil))
	f.Add(bytes.Join([][]byte{frag(0, 255, "x"), frag(254, 255, "y")}, nil))
	f.Add([]byte{0, 9, 0, 0, 0, 1, 0, 0, 2, 1, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		var d defragger
		for len(stream) >= 2 {
			n := min(int(stream[0])<<8|int(stream[1]), len(stream)-2)
			b := stream[2 : 2+n]
			stream = stream[2+n:]
			var m udpMessage
			if parseUDPMessage(b, &m) != nil {
				continue
			}
			whole := m.FragCount <= 1
			p, ok := d.feed(&m)
			if !ok {
				if whole {
					t.Fatalf("unfragmented message %x not delivered", b)
				}
				continue
			}
			if len(p) > quicconn.MaxUDPPacket {
				t.Fatalf("delivered a %d-byte datagram", len(p))
			}
			if whole && !bytes.Equal(p, m.Payload) {
				t.Fatalf("unfragmented message changed: %x -> %x", m.Payload, p)
			}
		}
	})
}

// FuzzFragmentRoundTrip cuts a datagram as WriteTo does, sends the
// fragments through the wire format in an arbitrary order with
// duplicates, and checks that exactly the datagram comes out.
func FuzzFragmentRoundTrip(f *testing.F) {
	f.Add(bytes.Repeat([]byte("0123456789"), 300), uint16(1200), []byte{2, 0, 1})
	f.Add([]byte("short"), uint16(40), []byte{1, 1, 0})
	f.Add([]byte{}, uint16(30), []byte{})
	f.Fuzz(func(t *testing.T, payload []byte, maxSize uint16, order []byte) {
		m := udpMessage{SessionID: 1, FragCount: 1, Addr: []byte("example.com:443"), Payload: payload}
		chunk, count, err := quicconn.FragmentPlan(m.headerLen(), len(payload), int(maxSize))
		if err != nil {
			return
		}
		// Every fragment once, in the order given (indexes mod count), then
		// any not yet sent.
		var seq []int
		sent := make([]bool, count)
		for _, o := range order {
			i := int(o) % count
			seq = append(seq, i)
			sent[i] = true
		}
		for i, s := range sent {
			if !s {
				seq = append(seq, i)
			}
		}
		var d defragger
		var got [][]byte
		for _, i := range seq {
			fr := fragment(&m, 9, chunk, count, i)
			if enc := appendUDPMessage(nil, &fr); len(enc) > int(maxSize) {
				t.Fatalf("fragment of %d bytes, over %d", len(enc), maxSize)
			}
			var p udpMessage
			if err := parseUDPMessage(appendUDPMessage(nil, &fr), &p); err != nil {
				t.Fatal(err)
			}
			if out, ok := d.feed(&p); ok {
				got = append(got, out)
			}
		}
		if len(payload) > quicconn.MaxUDPPacket {
			return
		}
		if len(got) == 0 || !bytes.Equal(got[0], payload) {
			t.Fatalf("%d bytes in %d fragments: delivered %d datagrams", len(payload), count, len(got))
		}
	})
}
