package relay

import (
	"sync"
	"sync/atomic"
)

// Buffer sizes of a stream direction: small while it is quiet, grown
// (medium or large) while bulk data flows (resize says when).
const (
	SmallBufferSize = 4 << 10
	// MediumBufferSize is one TLS record: the step between, for when many
	// flows are busy at once.
	MediumBufferSize = 16 << 10
	// BufferSize is the largest chunk that, with WebSocket and TLS framing
	// (four 16 KiB records, 100 bytes), still goes to a socket as one write
	// of at most one loopback TCP segment (MSS 65483) or GSO super-packet.
	// Measured on loopback TCP (Linux 6.18, 2 vCPUs): writes of 16 KiB cost
	// the writer 1.7x the CPU per byte of 56-64 KiB ones, and writes just
	// over the MSS (a full segment and a tiny one) 3x.
	BufferSize = 60 << 10
)

// DefaultBudget is the budget an engine gives its Buffers: how many bytes
// of grown (medium and large) buffers all its streams may hold at once.
// Large buffers are handed out while less than half of it is in use,
// medium ones while the rest lasts; beyond it a busy direction goes on
// with its small buffer. 16 bulk streams (32 directions, 1.9 MiB of large
// buffers) get large buffers throughout; 500 busy ones share 8 MiB
// instead of holding 60 MiB.
const DefaultBudget = 8 << 20

// Buffers hands out the read buffers of the stream directions that share
// it and keeps their grown buffers within its budget. The engine owns one
// for all its flows; it is safe for concurrent use.
type Buffers struct {
	budget int64
	used   atomic.Int64 // bytes of grown buffers handed out
	held   atomic.Int64 // buffers of any size handed out

	small, medium, large sync.Pool
}

// NewBuffers returns Buffers whose grown buffers stay within budget bytes
// (DefaultBudget when budget <= 0).
func NewBuffers(budget int64) *Buffers {
	if budget <= 0 {
		budget = DefaultBudget
	}
	return &Buffers{
		budget: budget,
		small:  sync.Pool{New: func() any { b := make([]byte, SmallBufferSize); return &b }},
		medium: sync.Pool{New: func() any { b := make([]byte, MediumBufferSize); return &b }},
		large:  sync.Pool{New: func() any { b := make([]byte, BufferSize); return &b }},
	}
}

// InUse is how many bytes of grown buffers are handed out now.
func (bs *Buffers) InUse() int64 { return bs.used.Load() }

// Held is how many buffers, of any size, stream directions hold now: those
// reading or writing, not those waiting for their source (see park).
func (bs *Buffers) Held() int64 { return bs.held.Load() }

// take reserves size bytes of the budget if that keeps its use at or below
// limit.
func (bs *Buffers) take(size, limit int64) bool {
	if bs.used.Add(size) <= limit {
		return true
	}
	bs.used.Add(-size)
	return false
}

// buffer is one stream direction's read buffer: small, or grown under the
// budget of bs. The zero value with bs set is ready and holds nothing.
type buffer struct {
	bs   *Buffers
	p    *[]byte
	size int // the size get takes when p is nil: that of the buffer park handed back; 0 small
}

// get returns the buffer for the next read, taking one when it holds none:
// of the size it parked, as far as the budget allows, else small.
func (b *buffer) get() *[]byte {
	if b.p != nil {
		return b.p
	}
	switch {
	case b.size == BufferSize && b.bs.take(BufferSize, b.bs.budget/2):
		b.p = b.bs.large.Get().(*[]byte)
	case b.size >= MediumBufferSize && b.bs.take(MediumBufferSize, b.bs.budget):
		b.p = b.bs.medium.Get().(*[]byte)
	default:
		b.p = b.bs.small.Get().(*[]byte)
	}
	b.size = 0
	b.bs.held.Add(1)
	return b.p
}

// park hands the buffer back while the direction waits for its source, and
// remembers its size for the next get: a bulk flow keeps its grown size
// across the waits, but an idle one holds nothing, nor any of the budget.
// Only a direction whose source can wait without reading (readwait:
// sockets, TLS, WebSocket, the protocols' streams, the TUN's conns) parks;
// the others (VMess over HTTP/2) block in Read with their buffer, small
// unless the last read brought 16 KiB or more. Measured in the benchmarks'
// held phase: 500 idle VLESS connections after a transfer held 15 MiB of
// relay buffers before parking and none after.
func (b *buffer) park() {
	if b.p != nil {
		size := len(*b.p)
		b.release()
		b.size = size
	}
}

// resize sets the buffer for the next read from how the last one went: it
// read n bytes into room for space. A full read says more is waiting: grow
// to the largest size the budget allows. A grown buffer that brings less
// than MediumBufferSize says the source is drained: back to small, since
// the next read may wait long. One that brings more without filling keeps
// its size: mid-transfer a socket read often returns part of 60 KiB, and
// dropping to 4 KiB there cost a 4 KiB read, write and small upstream
// frame every other read.
func (b *buffer) resize(n, space int) {
	size := len(*b.p)
	switch {
	case n == space && size < BufferSize:
		var np *[]byte
		switch {
		case b.bs.take(BufferSize, b.bs.budget/2):
			np = b.bs.large.Get().(*[]byte)
		case size < MediumBufferSize && b.bs.take(MediumBufferSize, b.bs.budget):
			np = b.bs.medium.Get().(*[]byte)
		default:
			return // the budget is spent: go on with this one
		}
		b.release()
		b.p = np
		b.bs.held.Add(1)
	case n < space && n < MediumBufferSize && size > SmallBufferSize:
		b.release()
	}
}

// release hands the buffer back; the next get takes a small one.
func (b *buffer) release() {
	b.size = 0
	if b.p == nil {
		return
	}
	b.bs.held.Add(-1)
	switch len(*b.p) {
	case BufferSize:
		b.bs.used.Add(-BufferSize)
		b.bs.large.Put(b.p)
	case MediumBufferSize:
		b.bs.used.Add(-MediumBufferSize)
		b.bs.medium.Put(b.p)
	default:
		b.bs.small.Put(b.p)
	}
	b.p = nil
}
