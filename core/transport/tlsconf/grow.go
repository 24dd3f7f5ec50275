package tlsconf

import (
	"bytes"
	"encoding/binary"
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
//
// The others keep crypto/tls's own buffer, and bytes.Buffer's growth makes
// it 32-48 KiB on a busy connection: a record's read must fit behind the
// partial record already there, or, at half the capacity, slide to the
// front; else the buffer doubles. 500 busy VLESS+WS+TLS connections held
// 14-18 MiB of them at the peak (heap profiles, SOCKS and TUN). While the
// budget is spent, a busy connection's buffer is fitted to one record
// instead (fitRecords): the partial record is moved to the front before
// each read, so one record's room (fitRecordBuffer) always suffices. It
// costs a copy of at most one record per record, and a read(2) per record
// where a 32 KiB buffer took one or two; the budget's connections, which
// carry the bulk transfers, pay nothing. A fitted connection whose reads
// fill the buffer asks for a large one too, so that it gets one once the
// budget has room again.

// BigRecordBuffer is the size of a large record buffer.
const BigRecordBuffer = 128 << 10

// maxRecord is a TLS record's largest size on the wire: 16 KiB of
// plaintext, the header, and room for the AEAD's overhead.
const maxRecord = 16<<10 + 5 + 256

// fitRecordBuffer is the capacity of a fitted record buffer: a whole
// record, and the bytes.MinRead that crypto/tls asks room for beyond what
// it needs.
const fitRecordBuffer = maxRecord + bytes.MinRead

// fitRecordCap is the largest record buffer fitRecords leaves in place:
// fitRecordBuffer's size class (18 KiB) and a little more; bytes.Buffer's
// doubling makes 32 KiB and up.
const fitRecordCap = 24 << 10

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

// spent reports whether a large buffer is beyond the budget now.
func (g *Grown) spent() bool { return g.used.Load()+BigRecordBuffer > g.limit }

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
	if c.grow != nil && c.rec.ok() && !c.big.Load() && (c.rec.raw.Len() >= maxRecord || c.fitted && c.sock.filled) {
		c.wantBig = true
	}
}

// growRecords runs before a read through the engine: when a large buffer
// was asked for, the budget allows it and the engine holds no plaintext,
// the record buffer becomes a large one.
func (c *Conn) growRecords() {
	if c.grow == nil || !c.rec.ok() || c.rec.in.Len() > 0 {
		return
	}
	if !c.wantBig || c.big.Load() || !c.grow.take(BigRecordBuffer) {
		c.wantBig = false
		if !c.big.Load() && c.grow.spent() {
			c.fitRecords()
		}
		return
	}
	c.wantBig = false
	c.fitted = false
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

// fitRecords runs before a read through the engine, while the budget of
// large buffers is spent and the engine holds no plaintext (which points
// into the record buffer). It replaces a buffer that bytes.Buffer doubled
// past one record's room (more than fitRecordCap), or one too small for the
// record whose header it holds, by one of fitRecordBuffer; and it moves a
// partial record to the front when the room behind it is less than a
// record. crypto/tls then reads each record into the room it has and does
// not grow the buffer. (A buffer of small records stays small: dynamic
// record sizing starts each connection at about one segment per record.)
// Before a record's header is in, its size is unknown: a buffer of more
// than half fitRecordCap but less than a whole record's room (the
// handshake's leaves one) is replaced as well, since bytes.Buffer would
// double it past fitRecordCap for the first large record.
func (c *Conn) fitRecords() {
	r := c.rec.raw
	p := r.Bytes()
	n := len(p)
	need := 0 // the record ahead, with crypto/tls's bytes.MinRead; 0 unknown
	if n >= 5 {
		need = 5 + int(binary.BigEndian.Uint16(p[3:5])) + bytes.MinRead
	}
	doubles := need == 0 && r.Cap() < fitRecordBuffer && 2*r.Cap() > fitRecordCap
	switch {
	case r.Cap() > fitRecordCap || need > r.Cap() || doubles:
		b := make([]byte, 0, max(fitRecordBuffer, n, need))
		b = append(b, p...)
		*r = *bytes.NewBuffer(b)
		*c.rec.in = bytes.Reader{}
		c.fitted = true
	case n > 0 && r.Available() < max(need, fitRecordBuffer)-n:
		r.Reset()
		r.Write(p) // to the front: copy handles the overlap
		c.fitted = true
	}
}
