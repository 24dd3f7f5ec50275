package relay

import (
	"sync"
	"sync/atomic"
)

// Buffer sizes of a stream direction. A direction reads into a small buffer
// while it is quiet and into a grown one (medium or large) while bulk data
// flows:
//
//   - A read that fills its buffer says more is waiting: the next read gets
//     the largest grown buffer the budget allows.
//   - A read into a grown buffer that does not fill it says the source is
//     drained: the grown buffer goes back to its pool at once and the next
//     read, which may wait for a long time, waits on the small buffer.
//
// So a direction blocked in Read with no data in flight holds only
// SmallBufferSize, however much it moved before: 500 idle connections after
// a transfer hold 4 MiB of relay buffers, not 60. A bulk flow whose source
// often runs dry pays one extra small read and write per time it does.
//
// 60 KiB is the largest chunk that, with WebSocket and TLS framing added
// (four 16 KiB records, 100 bytes), still goes to a socket as one write of
// at most one TCP segment on loopback (MSS 65483) or one GSO super-packet
// (64 KiB): the per-write and per-segment work of the kernel is what a
// relay pays most for after the bytes themselves. Measured on loopback
// TCP (Linux 6.18, 2 vCPUs, a reader draining the other end): the writer
// spends 1.7x the CPU per byte with writes of 16 KiB as with writes of
// 56-64 KiB, and 3x with writes just over the MSS (64 KiB plus TLS
// framing: a full segment and a tiny one). 16 KiB (one TLS record) is the
// step between, for when many flows are busy at once.
const (
	SmallBufferSize  = 4 << 10
	MediumBufferSize = 16 << 10
	BufferSize       = 60 << 10
)

// Budget is how many bytes of grown (medium and large) buffers all streams
// of the process may hold at once. Large buffers are handed out while less
// than half of it is in use, medium ones while the rest lasts; beyond it a
// busy direction goes on with its small buffer. 16 bulk streams (32
// directions, 1.9 MiB of large buffers) get large buffers throughout;
// 500 busy ones share 8 MiB instead of holding 60 MiB.
const Budget = 8 << 20

// budget counts the grown buffers in use. It is process-wide, like the
// pools it guards.
var budget struct {
	used atomic.Int64
}

var (
	smallPool  = sync.Pool{New: func() any { b := make([]byte, SmallBufferSize); return &b }}
	mediumPool = sync.Pool{New: func() any { b := make([]byte, MediumBufferSize); return &b }}
	largePool  = sync.Pool{New: func() any { b := make([]byte, BufferSize); return &b }}
)

// take reserves size bytes of the budget if that keeps the budget's use at
// or below limit.
func take(size, limit int64) bool {
	if budget.used.Add(size) <= limit {
		return true
	}
	budget.used.Add(-size)
	return false
}

// buffer is one stream direction's read buffer: small, or grown under the
// budget. The zero value is ready and holds nothing.
type buffer struct {
	p *[]byte
}

// get returns the buffer for the next read, taking a small one when it
// holds none.
func (b *buffer) get() *[]byte {
	if b.p == nil {
		b.p = smallPool.Get().(*[]byte)
	}
	return b.p
}

// resize sets the buffer for the next read from how the last one went:
// filled says it filled the buffer (more is waiting).
func (b *buffer) resize(filled bool) {
	size := len(*b.p)
	switch {
	case filled && size < BufferSize:
		var np *[]byte
		switch {
		case take(BufferSize, Budget/2):
			np = largePool.Get().(*[]byte)
		case size < MediumBufferSize && take(MediumBufferSize, Budget):
			np = mediumPool.Get().(*[]byte)
		default:
			return // the budget is spent: go on with this one
		}
		b.release()
		b.p = np
	case !filled && size > SmallBufferSize:
		b.release()
	}
}

// release hands the buffer back; the next get takes a small one.
func (b *buffer) release() {
	if b.p == nil {
		return
	}
	switch len(*b.p) {
	case BufferSize:
		budget.used.Add(-BufferSize)
		largePool.Put(b.p)
	case MediumBufferSize:
		budget.used.Add(-MediumBufferSize)
		mediumPool.Put(b.p)
	default:
		smallPool.Put(b.p)
	}
	b.p = nil
}
