package trojan

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

// FuzzReadPacket feeds arbitrary server bytes to the UDP frame reader: it
// must not panic, never return more than the buffer holds, and a whole
// frame it accepts encodes back to the bytes it consumed (unless the
// address was normalised: a name that is an IP literal, a mapped IPv6).
func FuzzReadPacket(f *testing.F) {
	for _, d := range []flow.Addr{flow.NameAddr("1.2.3.4", 53), flow.NameAddr("::1", 5353), flow.NameAddr("a.example", 443)} {
		b, _ := appendPacket(nil, d, []byte("payload"))
		f.Add(b)
	}
	f.Add([]byte{3, 0})
	f.Add([]byte{1, 1, 2, 3, 4, 0, 53, 0xff, 0xff, '\r', '\n'})
	f.Fuzz(func(t *testing.T, data []byte) {
		// One fill takes all of data, so Buffered is what is left.
		r := bufio.NewReaderSize(bytes.NewReader(data), max(16, len(data)))
		buf := make([]byte, 512)
		off := 0
		for {
			n, from, err := readPacket(r, buf)
			if err != nil {
				return
			}
			if n > len(buf) {
				t.Fatalf("%d bytes into a %d-byte buffer", n, len(buf))
			}
			end := len(data) - r.Buffered()
			frame := data[off:end]
			off = end
			re, err := appendPacket(nil, from, buf[:n])
			if err != nil {
				t.Fatalf("re-encode %v: %v", from, err)
			}
			if len(re) == len(frame) && re[0] == frame[0] && !bytes.Equal(re, frame) && !from.IsName() {
				t.Fatalf("frame %x re-encodes as %x", frame, re)
			}
		}
	})
}
