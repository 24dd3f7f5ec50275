package udpstreams

import (
	"bytes"
	"io"
	"testing"
)

func TestReadFramed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		buf     int
		want    []string // datagrams read before the error
		wantErr error    // nil: any error
	}{
		{name: "two, then the end", in: []byte{0, 3, 'a', 'b', 'c', 0, 0}, buf: MaxDatagram, want: []string{"abc", ""}, wantErr: io.EOF},
		{name: "cut in the length", in: []byte{0}, buf: MaxDatagram, wantErr: io.ErrUnexpectedEOF},
		{name: "cut in the payload", in: []byte{0, 3, 'a'}, buf: MaxDatagram, wantErr: io.ErrUnexpectedEOF},
		{name: "cut right after the length", in: []byte{0, 3}, buf: MaxDatagram, wantErr: io.ErrUnexpectedEOF},
		{name: "larger than the buffer", in: []byte{0, 9, 'a'}, buf: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bytes.NewReader(tc.in)
			var hdr [2]byte
			p := make([]byte, tc.buf)
			var got []string
			var err error
			for {
				var n int
				if n, err = ReadFramed(r, &hdr, p); err != nil {
					break
				}
				got = append(got, string(p[:n]))
			}
			if len(got) != len(tc.want) || (tc.wantErr != nil && err != tc.wantErr) {
				t.Fatalf("read %q, then %v; want %q, then %v", got, err, tc.want, tc.wantErr)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("datagram %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
