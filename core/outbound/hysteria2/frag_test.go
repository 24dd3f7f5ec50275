package hysteria2

import (
	"bytes"
	"errors"
	"testing"
)

// cut splits a datagram into messages the way WriteTo does.
func cut(t *testing.T, payload []byte, maxSize int, packetID uint16) []udpMessage {
	t.Helper()
	m := udpMessage{SessionID: 7, FragCount: 1, Addr: []byte("10.0.0.1:53"), Payload: payload}
	chunk, count, err := fragmentPlan(m.headerLen(), len(payload), maxSize)
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
		{20, 255*10 + 1, 30, 0, 0, errTooManyFragments},
		{20, 5, 20, 0, 0, errTooManyFragments},
	}
	for _, tt := range tests {
		chunk, count, err := fragmentPlan(tt.header, tt.payload, tt.max)
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
