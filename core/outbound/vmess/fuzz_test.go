package vmess

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
)

// reader is a transport that reads from r and drops writes.
type reader struct {
	net.Conn
	r io.Reader
}

func (r reader) Read(p []byte) (int, error)  { return r.r.Read(p) }
func (r reader) Write(p []byte) (int, error) { return len(p), nil }

// FuzzResponse feeds the client's response reading a server's reply: the
// response header's plaintext (sealed with the stream's keys, so that the
// decoder's checks behind the AEAD are reached), then chunks whose
// plaintexts are the parts of body between 0xff bytes (sealed too), then
// raw trailing bytes. Read must end with data or an error, never panic or
// return more than asked.
func FuzzResponse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, []byte("hello\xffworld"), []byte{}, false)
	f.Add([]byte{0, 1, 2, 3}, []byte{}, []byte{0xde, 0xad}, true)
	f.Add([]byte{0, 0, 0, 200}, []byte("x"), []byte{0, 0}, false)
	f.Add([]byte{}, []byte{}, bytes.Repeat([]byte{0xff}, 40), true)
	f.Fuzz(func(t *testing.T, hdr, body, tail []byte, padding bool) {
		if len(hdr) > 0xffff-16 || len(body) > 1<<16 {
			return
		}
		c := testConn(nil, secAES128GCM)
		if padding {
			c.rq.opt |= optGlobalPadding
		}
		if len(hdr) > 0 {
			hdr = append([]byte(nil), hdr...)
			hdr[0] = c.rq.v // mostly the right V, so the body is reached
		}
		rk, riv := respKeys(&c.rq)
		var wire []byte
		var l [2]byte
		binary.BigEndian.PutUint16(l[:], uint16(len(hdr)))
		k1 := kdf16(rk[:], []byte(labelRespLenKey))
		n1 := kdf(riv[:], []byte(labelRespLenIV))
		wire = gcm(k1).Seal(wire, n1[:12], l[:], nil)
		k2 := kdf16(rk[:], []byte(labelRespKey))
		n2 := kdf(riv[:], []byte(labelRespIV))
		wire = gcm(k2).Seal(wire, n2[:12], hdr, nil)
		enc := newBody(c.rq.security, c.rq.opt, &rk, &riv)
		for _, part := range bytes.Split(body, []byte{0xff}) {
			if len(part) > 0 {
				wire = enc.seal(wire, part)
			}
		}
		wire = append(wire, tail...)
		c.tr = reader{r: bytes.NewReader(wire)}
		c.reqSent.Store(true)
		buf := make([]byte, 1000)
		for range 1 << 12 {
			n, err := c.Read(buf)
			if n > len(buf) {
				t.Fatalf("read %d into %d", n, len(buf))
			}
			if err != nil {
				return
			}
		}
		t.Fatal("Read neither ended nor failed")
	})
}
