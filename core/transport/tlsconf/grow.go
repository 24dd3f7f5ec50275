package tlsconf

import (
	"bytes"
	"sync/atomic"
)

// Large record buffers. crypto/tls reads records into rawInput with one
// socket read each time it lacks a whole record, into what room the buffer
// has: with the buffer bytes.Buffer's doubling leaves (20-37 KiB), a bulk
// download costs a read(2) per one or two 16 KiB records, plus the empty
// read that ends each TryRead (profile of a VLESS+REALITY download: 31 %
// of the client's CPU in read(2)). A read that leaves a whole record
// waiting in the buffer says the socket holds more than the buffer takes;
// then, once the plaintext has been read (so that nothing points into the
// old buffer), the buffer is replaced by one of BigRecordBuffer bytes with
// the same contents, and one read(2) brings up to eight records. The large
// buffer goes when the connection is quiet (idle.go) or closed.
//
// A Grown bounds how many large buffers the connections of one Stream hold
// at once, so that 500 busy connections do not each hold one.

// BigRecordBuffer is the size of a large record buffer.
const BigRecordBuffer = 128 << 10

// maxRecord is a TLS record's largest size on the wire: 16 KiB of
// plaintext, the header, and room for the AEAD's overhead.
const maxRecord = 16<<10 + 5 + 256

// DefaultGrownBudget is a Stream's budget of large record buffers: 32
// connections at once.
const DefaultGrownBudget = 32 * BigRecordBuffer

// Grown is a budget of bytes of large record buffers, shared by the
// connections of one Stream. It is safe for concurrent use.
type Grown struct {
	limit int64
	used  atomic.Int64
}

// NewGrown returns a budget of limit bytes.
func NewGrown(limit int64) *Grown { return &Grown{limit: limit} }

// InUse is how many bytes of large buffers are held now.
func (g *Grown) InUse() int64 { return g.used.Load() }

func (g *Grown) take(n int64) bool {
	if g.used.Add(n) <= g.limit {
		return true
	}
	g.used.Add(-n)
	return false
}

// noteBacklog runs after a read through the engine: a whole record left
// in the buffer asks for a large one.
func (c *Conn) noteBacklog() {
	if c.grow != nil && c.rec.ok() && !c.big.Load() && c.rec.raw.Len() >= maxRecord {
		c.wantBig = true
	}
}

// growRecords runs before a read through the engine: when a large buffer
// was asked for, the budget allows it and the engine holds no plaintext,
// the record buffer becomes a large one.
func (c *Conn) growRecords() {
	if !c.wantBig || c.rec.in.Len() > 0 {
		return
	}
	c.wantBig = false
	if c.big.Load() || !c.grow.take(BigRecordBuffer) {
		return
	}
	b := make([]byte, 0, BigRecordBuffer)
	b = append(b, c.rec.raw.Bytes()...)
	*c.rec.raw = *bytes.NewBuffer(b)
	*c.rec.in = bytes.Reader{}
	c.big.Store(true)
}

// dropBig returns a large buffer's bytes to the budget; the caller drops
// the buffer (or the connection).
func (c *Conn) dropBig() {
	if c.big.Swap(false) {
		c.grow.used.Add(-BigRecordBuffer)
	}
}
