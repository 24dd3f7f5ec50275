package udpgro

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// groOOB returns a UDP_GRO control message carrying seg.
func groOOB(seg int32) []byte {
	return udpCmsg(unix.UDP_GRO, binary.NativeEndian.AppendUint32(nil, uint32(seg)))
}

// FuzzSplit splits one received datagram by the control messages the
// kernel handed with it (arbitrary bytes, a segment size among them) into
// messages of an arbitrary buffer size, without a socket. The segments
// must never overrun a buffer or the datagram and, where they fit, add up
// to the datagram; control messages handed on fit their buffer.
func FuzzSplit(f *testing.F) {
	f.Add(bytes.Repeat([]byte("0123456789"), 300), groOOB(1200), uint16(1500), uint8(64))
	f.Add(bytes.Repeat([]byte{7}, 100), append(groOOB(33), make([]byte, unix.CmsgSpace(4))...), uint16(20), uint8(8))
	f.Add([]byte("whole"), []byte(nil), uint16(5), uint8(0))
	f.Add(bytes.Repeat([]byte{1}, 10), groOOB(-1), uint16(4), uint8(128))
	f.Add([]byte{}, groOOB(0), uint16(1), uint8(16))
	f.Fuzz(func(t *testing.T, data, oob []byte, bufSize uint16, oobSize uint8) {
		if len(data) > slotSize {
			return
		}
		oob = oob[:min(len(oob), int(oobSize))]
		c := &Conn{msgs: make([]ipv4.Message, 1), n: 1}
		c.msgs[0] = ipv4.Message{Buffers: [][]byte{data}, N: len(data), OOB: bytes.Clone(oob), NN: len(oob)}
		c.start()
		ms := make([]ipv4.Message, 3)
		for i := range ms {
			ms[i].Buffers = [][]byte{make([]byte, bufSize)}
			ms[i].OOB = make([]byte, oobSize/2)
		}
		var got []byte
		truncated := false
		for rounds := 0; c.cur < c.n; rounds++ {
			if rounds > len(data)+1 {
				t.Fatalf("no progress splitting %d bytes (segment %d)", len(data), c.seg)
			}
			k, err := c.read(ms, 0)
			if err != nil || k == 0 {
				t.Fatalf("read = %d, %v", k, err)
			}
			for _, m := range ms[:k] {
				if m.N > len(m.Buffers[0]) || m.NN > len(m.OOB) {
					t.Fatalf("message of %d bytes, %d control bytes, in buffers of %d and %d", m.N, m.NN, len(m.Buffers[0]), len(m.OOB))
				}
				truncated = truncated || m.Flags&unix.MSG_TRUNC != 0
				got = append(got, m.Buffers[0][:m.N]...)
			}
		}
		if !truncated && !bytes.Equal(got, data) {
			t.Fatalf("segments add up to %d bytes of a %d-byte datagram", len(got), len(data))
		}
	})
}

// TestParseControlMessage parses buffers around one header's length: what
// is shorter than a header is refused without being read past its end.
func TestParseControlMessage(t *testing.T) {
	whole := groOOB(1200)
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"empty", nil, false},
		{"one byte", whole[:1], false},
		{"header-1", bytes.Clone(whole[:unix.SizeofCmsghdr-1]), false},
		{"header only, claiming a body", bytes.Clone(whole[:unix.SizeofCmsghdr]), false},
		{"truncated body", bytes.Clone(whole[:unix.CmsgLen(4)-1]), false},
		{"whole", whole, true},
	} {
		h, data, _, err := ParseControlMessage(tc.b)
		if tc.ok != (err == nil) {
			t.Errorf("%s: err = %v; want success %v", tc.name, err, tc.ok)
		}
		if tc.ok && (h.Type != unix.UDP_GRO || int32(binary.NativeEndian.Uint32(data)) != 1200) {
			t.Errorf("%s: %+v %x", tc.name, h, data)
		}
	}
}
