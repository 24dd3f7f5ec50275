package vless

import (
	"crypto/tls"
	"net"
	"sync"
)

// A Write of more than one TLS record's worth (16 KiB) is cut by crypto/tls
// into several records, each written to the socket in its own syscall: a
// 32 KiB WebSocket frame is three records (the third a few bytes: the frame
// header makes it just over 32 KiB), so three writes and three segments
// for the server to take. batchConn and tlsConn put the records of one
// Write into one socket write.

// batchBufs holds the buffers records are gathered in: a 32 KiB Write plus
// framing and the records' overhead fits without growing.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 40<<10); return &b }}

// batchConn is the TCP conn under TLS. Between begin and flush it gathers
// what TLS writes instead of writing it; otherwise it writes through.
type batchConn struct {
	net.Conn

	mu  sync.Mutex // serialises socket writes, so gathered and direct writes keep their order
	buf *[]byte    // non-nil between begin and flush
	err error      // a failed flush: later writes fail too
}

// Write gathers p while a batch is open and writes it otherwise.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if b.buf != nil {
		*b.buf = append(*b.buf, p...)
		return len(p), nil
	}
	return b.Conn.Write(p)
}

// begin opens a batch.
func (b *batchConn) begin() {
	bp := batchBufs.Get().(*[]byte)
	*bp = (*bp)[:0]
	b.mu.Lock()
	b.buf = bp
	b.mu.Unlock()
}

// flush closes the batch and writes what it gathered.
func (b *batchConn) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bp := b.buf
	b.buf = nil
	if b.err == nil && len(*bp) > 0 {
		if _, err := b.Conn.Write(*bp); err != nil {
			b.err = err
		}
	}
	if cap(*bp) <= 64<<10 {
		batchBufs.Put(bp)
	}
	return b.err
}

// tlsConn is a TLS client conn whose Writes go to the socket in one write
// each (see batchConn).
type tlsConn struct {
	*tls.Conn
	bc *batchConn
	wm sync.Mutex // one batch at a time
}

// newTLSConn wraps raw in TLS with cfg, gathering each Write's records.
func newTLSConn(raw net.Conn, cfg *tls.Config) *tlsConn {
	bc := &batchConn{Conn: raw}
	return &tlsConn{Conn: tls.Client(bc, cfg), bc: bc}
}

// Write encrypts p and writes its records in one socket write. Small
// writes (one record even while crypto/tls starts a connection with small
// records) go straight through.
func (c *tlsConn) Write(p []byte) (int, error) {
	if len(p) <= minBatch {
		return c.Conn.Write(p)
	}
	c.wm.Lock()
	defer c.wm.Unlock()
	c.bc.begin()
	n, err := c.Conn.Write(p)
	if ferr := c.bc.flush(); err == nil && ferr != nil {
		return 0, ferr
	}
	return n, err
}

// minBatch is the largest Write that goes straight through: crypto/tls
// starts each connection with records of about one TCP segment (dynamic
// record sizing), so more than that may be several records.
const minBatch = 1 << 10
