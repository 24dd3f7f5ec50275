package h2

import "sync"

// chunkSize is the size of the pooled chunks received DATA is kept in.
const chunkSize = 16 << 10

// chunkPool is shared by all streams: a stream holds chunks only while
// it has unread bytes.
var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// rxBuf is a stream's unread response bytes: a queue of pooled chunks,
// read from r in the first and written at w in the last.
type rxBuf struct {
	chunks []*[chunkSize]byte
	r, w   int
	n      int // bytes buffered
}

func (b *rxBuf) write(p []byte) {
	for len(p) > 0 {
		if len(b.chunks) == 0 || b.w == chunkSize {
			b.chunks = append(b.chunks, chunkPool.Get().(*[chunkSize]byte))
			b.w = 0
		}
		k := copy(b.chunks[len(b.chunks)-1][b.w:], p)
		b.w += k
		b.n += k
		p = p[k:]
	}
}

func (b *rxBuf) read(p []byte) int {
	n := 0
	for n < len(p) && b.n > 0 {
		end := chunkSize
		if len(b.chunks) == 1 {
			end = b.w
		}
		k := copy(p[n:], b.chunks[0][b.r:end])
		n += k
		b.r += k
		b.n -= k
		if b.r == end {
			b.pop()
		}
	}
	return n
}

func (b *rxBuf) pop() {
	chunkPool.Put(b.chunks[0])
	b.chunks[0] = nil
	b.chunks = b.chunks[1:]
	b.r = 0
	if len(b.chunks) == 0 {
		b.chunks, b.w = nil, 0
	}
}

// free returns every chunk.
func (b *rxBuf) free() {
	for len(b.chunks) > 0 {
		b.pop()
	}
	b.n = 0
}
