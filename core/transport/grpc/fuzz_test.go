package grpc

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"golang.org/x/net/http2/hpack"
)

type hpackField = hpack.HeaderField

func appendUvarint(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }

// FuzzReader: any byte stream decodes to data or a clean error without
// panicking or returning more than its field-1 bytes; data re-encoded
// decodes to itself.
func FuzzReader(f *testing.F) {
	f.Add(append(appendHeader(nil, 3), "abc"...))
	f.Add(appendMulti(nil, []byte("ab"), nil, []byte("c")))
	f.Add([]byte{0, 0, 0, 0, 12, 0x10, 0x96, 0x01, 0x1a, 2, 'x', 'y', 0x0d, 1, 2, 3, 4})
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := io.ReadAll(&reader{r: bytes.NewReader(in)})
		if len(got) > len(in) {
			t.Fatalf("decoded %d bytes from %d", len(got), len(in))
		}
		if err != nil && len(in) == 0 {
			t.Fatalf("empty stream: %v", err)
		}
		var b bytes.Buffer
		c := &conn{Conn: fakeConn{&b}}
		c.Write(got)
		again, err := io.ReadAll(&reader{r: &b})
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("re-encoded data decodes to %q, %v; want %q", again, err, got)
		}
	})
}
