package vmess

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// FuzzResponse feeds the client's response reading a server's reply: the
// response header's plaintext (sealed with the stream's keys, so that the
// decoder's checks behind the AEAD are reached), then chunks whose
// plaintexts are the parts of body between 0xff bytes (sealed too), then
// raw trailing bytes, arriving in steps. Read and TryRead, in turns, must
// end with data or an error, never panic or return more than asked.
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
		// The bytes arrive in steps; Reads (which may wait for the next
		// step) and TryReads (which never do) take turns.
		ac := &nettest.Arrivals{End: io.EOF}
		ac.Every(wire, 1+(len(body)*7+len(tail))%2000)
		c.Conn = ac
		c.rw, c.try = readwait.For(ac)
		c.reqSent.Store(true)
		buf := make([]byte, 1000)
		for i := range 1 << 13 {
			var n int
			var err error
			if i%2 == 1 {
				if len(ac.Later) > 0 {
					ac.Arrive()
				}
				n, err = c.TryRead(buf)
				if err != nil {
					t.Fatalf("TryRead: %v", err)
				}
			} else {
				n, err = c.Read(buf)
			}
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
