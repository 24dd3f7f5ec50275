package vmess

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// maxBatch is the most payload one Write seals and writes at once: the
// relay's largest read (60 KiB) is one batch of four chunks, and with the
// chunks' overhead still fits one WebSocket frame (64 KiB) and one socket
// write of the TLS layer.
const maxBatch = 60 << 10

// Read buffer sizes: an idle stream waits with the small one; a bulk
// stream (a read filled the small one, or a chunk does not fit it) moves to
// the large one, which holds the largest chunk (64 KiB) and then some, and
// back after shrinkAfter small reads in a row.
const (
	smallRead   = 4 << 10
	largeRead   = 68 << 10
	shrinkAfter = 16
)

// Batch buffers hold one batch: WebSocket headroom, the request header,
// the sealed payload and its chunks' overhead. A batch of one chunk (the
// relay's small and medium reads: what each of many busy flows gets) takes
// a small one, so that a flow whose write waits (VMess over HTTP/2 waits
// in Write for the server's flow-control window) holds 17 KiB, not 62:
// 500 busy VMess-H2 uploads had ~270 writes waiting at the peak.
const (
	batchExtra    = 1024
	smallBatchCap = maxChunkPayload + batchExtra + 2*chunkOverhead
	largeBatchCap = maxBatch + batchExtra + 4*chunkOverhead
)

var (
	smallOut  = sync.Pool{New: func() any { b := make([]byte, 0, smallBatchCap); return &b }}
	largeOut  = sync.Pool{New: func() any { b := make([]byte, 0, largeBatchCap); return &b }}
	smallBufs = sync.Pool{New: func() any { b := make([]byte, smallRead); return &b }}
	largeBufs = sync.Pool{New: func() any { b := make([]byte, largeRead); return &b }}
)

func putRead(b *[]byte) {
	if len(*b) == largeRead {
		largeBufs.Put(b)
	} else {
		smallBufs.Put(b)
	}
}

// frameWriter is a transport that frames a write in the caller's buffer
// (ws.Conn): the batch is built after its headroom, so the frame header
// goes in front without a copy.
type frameWriter interface {
	FrontHeadroom() int
	WriteFrame(b []byte) (int, error)
}

// conn is one VMess stream. The sealed request header goes out with the
// first Write; the response header is read before the first Read returns
// data. Each Write is sealed into chunks in one pooled buffer and written
// in one transport write; Read opens chunks from its buffer straight into
// the caller's, as many as have arrived.
type conn struct {
	net.Conn // the transport; its addresses and deadlines are the stream's

	client *Client
	fw     frameWriter        // nil: the transport frames nothing
	head   int                // fw's headroom
	try    readwait.TryReader // the transport's (readwait.For); nil: it cannot read without waiting
	rw     readwait.Waiter    // likewise; nil: it cannot wait
	raw    bool               // security zero: no chunks, the stream as it is
	packet bool               // a UDP stream: each Write is one chunk, whatever its size

	wmu     sync.Mutex
	req     []byte // the sealed request header until it is sent
	reqSent atomic.Bool
	sent    chan struct{} // closed once the request has been written (or failed)
	werr    error
	wbody   *body
	wend    bool // the end chunk went out (CloseWrite)

	rmu      sync.Mutex
	rq       request // the request's keys, for the response
	resp     bool    // the response header was read
	rbody    *body   // the response direction's chunks (nil with raw)
	buf      *[]byte
	r, w     int
	chunk    bool // size of the next chunk decoded: size, pad
	size     int
	pad      int
	pend     []byte // opened plaintext not yet returned (a chunk larger than p)
	rerr     error  // sticky: returned once the buffer is drained
	smallRun int
	parked   bool // park gave a large buffer back: fill takes a large one

	closeOnce sync.Once
	closed    chan struct{}
}

func newConn(tr net.Conn, c *Client, rq *request, req []byte, raw bool) *conn {
	vc := &conn{Conn: tr, client: c, raw: raw, req: req, rq: *rq, sent: make(chan struct{}), closed: make(chan struct{})}
	if fw, ok := tr.(frameWriter); ok {
		vc.fw, vc.head = fw, fw.FrontHeadroom()
	}
	vc.rw, vc.try = readwait.For(tr)
	vc.wbody = newBody(rq.security, rq.opt, &rq.key, &rq.iv)
	return vc
}

// Write seals p into chunks and writes them, maxBatch at a time, each
// batch in one transport write; the first carries the request header.
func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return 0, c.werr
	}
	if c.wend {
		return 0, fmt.Errorf("vmess: %s: write after CloseWrite", c.client.addr)
	}
	if len(p) == 0 && c.reqSent.Load() {
		return 0, nil
	}
	batch := maxBatch
	if c.packet {
		batch = max(len(p), 1) // one datagram, one chunk
	}
	done := 0
	for first := true; first || done < len(p); first = false {
		seg := p[done:min(done+batch, len(p))]
		if err := c.writeBatch(seg, false); err != nil {
			return done, err
		}
		done += len(seg)
	}
	return done, nil
}

// writeBatch seals seg (and the end chunk when end is set) after the
// request header if it has not gone yet, and writes it. c.wmu is held.
func (c *conn) writeBatch(seg []byte, end bool) error {
	// At most two chunks (seg's and the end chunk) when seg fits one.
	pool := &largeOut
	if len(seg) <= maxChunkPayload && c.head+len(c.req)+len(seg)+2*chunkOverhead <= smallBatchCap {
		pool = &smallOut
	}
	bp := pool.Get().(*[]byte)
	out := (*bp)[:c.head]
	if !c.reqSent.Load() {
		out = append(out, c.req...)
	}
	switch {
	case c.raw:
		out = append(out, seg...)
	default:
		step := maxChunkPayload
		if c.packet {
			step = maxDatagram
		}
		for i := 0; i < len(seg); i += step {
			out = c.wbody.seal(out, seg[i:min(i+step, len(seg))])
		}
		if end {
			out = c.wbody.seal(out, nil)
		}
	}
	var err error
	if c.fw != nil {
		_, err = c.fw.WriteFrame(out)
	} else {
		_, err = c.Conn.Write(out)
	}
	if cap(out) == cap(*bp) { // not grown past the pool's size by append
		*bp = out[:0]
		pool.Put(bp)
	}
	if !c.reqSent.Load() {
		c.req = nil
		c.reqSent.Store(true)
		close(c.sent)
	}
	if err != nil {
		c.werr = fmt.Errorf("vmess: write to %s: %w", c.client.addr, err)
		return c.werr
	}
	return nil
}

// CloseWrite sends the end chunk: the server passes the EOF on to the
// destination and goes on relaying the other direction.
func (c *conn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if c.wend {
		return nil
	}
	if c.raw {
		// No end marker without chunks: only a TCP transport can say it.
		cw, ok := c.Conn.(interface{ CloseWrite() error })
		if !ok {
			return fmt.Errorf("vmess: %s: cannot half-close with security zero over this transport", c.client.addr)
		}
		if !c.reqSent.Load() {
			if err := c.writeBatch(nil, false); err != nil {
				return err
			}
		}
		c.wend = true
		return cw.CloseWrite()
	}
	c.wend = true
	return c.writeBatch(nil, true)
}

// SoftCloseWrite reports that CloseWrite is VMess's end chunk, which a
// server may not pass on to the destination (relay.SoftCloser); with
// security zero over TCP it is the transport's FIN.
func (c *conn) SoftCloseWrite() bool { return !c.raw }

// sendRequest sends the request header alone if no Write has yet.
func (c *conn) sendRequest() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.reqSent.Load() {
		return c.werr
	}
	return c.writeBatch(nil, false)
}

// Read returns the stream's data: after the response header, the
// plaintext of as many chunks as have arrived (the first may wait).
func (c *conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.resp {
		if err := c.readResponse(); err != nil {
			return 0, err
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.raw {
		return c.readRaw(p)
	}
	n := 0
	if len(c.pend) > 0 {
		n = copy(p, c.pend)
		c.pend = c.pend[n:]
	}
	for n < len(p) && len(c.pend) == 0 {
		m, err := c.readChunk(p[n:], n == 0)
		n += m
		if err != nil {
			if n > 0 && err != errNotYet {
				c.rerr = err
			}
			if n > 0 || err == errNotYet {
				break
			}
			return 0, err
		}
	}
	c.afterRead(n)
	return n, nil
}

// TryRead returns what Read would without waiting for the network
// (readwait.TryReader): what is left of a chunk, the chunks whole in the
// buffer and those the transport completes at once (its TryRead). It
// returns (0, nil) when none is there and before the response header;
// a failure or the stream's end is left to the next Read.
func (c *conn) TryRead(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.resp || len(p) == 0 {
		return 0, nil
	}
	if c.raw {
		switch {
		case c.w > c.r:
			n := copy(p, (*c.buf)[c.r:c.w])
			c.r += n
			return n, nil
		case c.rerr != nil || c.try == nil:
			return 0, nil
		}
		n, _ := c.try.TryRead(p) // an error shows again on the next Read
		return n, nil
	}
	n := copy(p, c.pend)
	c.pend = c.pend[n:]
	for n < len(p) && len(c.pend) == 0 {
		m, err := c.readChunk(p[n:], false)
		n += m
		if err != nil {
			break // errNotYet, or one kept in rerr for the next Read
		}
	}
	if n == 0 {
		c.park()
	} else {
		c.afterRead(n)
	}
	return n, nil
}

// ReadWaiters offers the stream's TryRead only when its transport has one
// (readwait.Wrapper): otherwise it could return only what is already
// buffered, and a relay would hand its buffer back and take it again
// before nearly every read for nothing.
func (c *conn) ReadWaiters() (readwait.Waiter, readwait.TryReader) {
	if c.try == nil {
		return c, nil
	}
	return c, c
}

// WaitRead waits for the server's next bytes without reading them, and
// without the read buffer when nothing is left in it (readwait.Waiter):
// an idle stream then holds no buffer, here or in the relay; a bulk one
// takes one of the same size back. It returns at once while part of a
// chunk is buffered: its rest is on the way, and the Read that waits for
// it, holding the relay's buffer for that while, saves the system call a
// wait on the transport would cost (a peek). Before the response header
// it cannot wait.
func (c *conn) WaitRead() bool {
	c.rmu.Lock()
	if !c.resp {
		c.rmu.Unlock()
		return false
	}
	ready := len(c.pend) > 0 || c.w > c.r || c.rerr != nil
	if !ready {
		c.park()
	}
	rw := c.rw
	c.rmu.Unlock()
	return ready || (rw != nil && rw.WaitRead())
}

// park gives the read buffer back while nothing is in it, remembering
// whether it was a large one for the next fill.
func (c *conn) park() {
	if c.buf != nil && c.r == c.w && len(c.pend) == 0 {
		c.parked = len(*c.buf) == largeRead
		putRead(c.buf)
		c.buf, c.r, c.w = nil, 0, 0
	}
}

// readDatagram reads the next chunk, one datagram, into p (cut to len(p)).
func (c *conn) readDatagram(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.resp {
		if err := c.readResponse(); err != nil {
			return 0, err
		}
	}
	n, err := c.readChunk(p, true)
	c.pend = nil
	return n, err
}

// errNotYet says the next chunk has not fully arrived and Read must not
// wait for it.
var errNotYet = errors.New("vmess: chunk not yet here")

// readChunk opens the next chunk into p (or, when it does not fit, into
// the buffer, keeping the rest in c.pend) and returns the bytes put in p.
// Without wait it returns errNotYet when the chunk has not fully arrived.
func (c *conn) readChunk(p []byte, wait bool) (int, error) {
	if !c.chunk {
		ok, err := c.fill(2, wait)
		if !ok {
			return 0, err
		}
		size, pad, err := c.rbody.chunkSize([2]byte((*c.buf)[c.r : c.r+2]))
		if err != nil {
			return 0, c.fail(err)
		}
		c.r += 2
		c.chunk, c.size, c.pad = true, size, pad
	}
	if c.size == c.rbody.overhead()+c.pad {
		// The end chunk (empty payload): the server's EOF.
		if ok, err := c.fill(c.size, wait); !ok {
			return 0, err
		}
		c.r += c.size
		c.chunk = false
		c.rerr = io.EOF
		return 0, io.EOF
	}
	ok, err := c.fill(c.size, wait)
	if !ok {
		return 0, err
	}
	sealed := (*c.buf)[c.r : c.r+c.size-c.pad]
	plain := len(sealed) - c.rbody.overhead()
	c.r += c.size
	c.chunk = false
	if plain <= len(p) {
		if _, err := c.rbody.open(p[:0], sealed); err != nil {
			return 0, c.fail(fmt.Errorf("vmess: chunk from %s does not open: %w", c.client.addr, err))
		}
		return plain, nil
	}
	out, err := c.rbody.open(sealed[:0], sealed)
	if err != nil {
		return 0, c.fail(fmt.Errorf("vmess: chunk from %s does not open: %w", c.client.addr, err))
	}
	n := copy(p, out)
	c.pend = out[n:]
	return n, nil
}

// fail makes err the stream's read error from now on.
func (c *conn) fail(err error) error {
	c.rerr = err
	c.r, c.w = 0, 0
	return err
}

// fill makes sure k bytes are buffered from c.r on, reading from the
// transport (without wait: only what is there at once). It reports false
// with errNotYet when they have not arrived and wait is off, or with the
// transport's error.
func (c *conn) fill(k int, wait bool) (bool, error) {
	if c.w-c.r >= k {
		return true, nil
	}
	if c.rerr != nil {
		err := c.rerr
		if err == io.EOF && c.w > c.r {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	if !wait && c.try == nil {
		return false, errNotYet
	}
	if c.buf == nil {
		if k > smallRead || c.parked {
			c.buf = largeBufs.Get().(*[]byte)
		} else {
			c.buf = smallBufs.Get().(*[]byte)
		}
		c.parked = false
	}
	for c.w-c.r < k {
		b := *c.buf
		if c.w == len(b) || len(b)-c.r < k {
			if len(b) < largeRead {
				nb := largeBufs.Get().(*[]byte)
				c.w = copy(*nb, b[c.r:c.w])
				c.r = 0
				smallBufs.Put(c.buf)
				c.buf = nb
				c.smallRun = 0
			} else {
				c.w = copy(b, b[c.r:c.w])
				c.r = 0
			}
			b = *c.buf
		}
		var m int
		var err error
		if wait {
			m, err = c.Conn.Read(b[c.w:])
		} else {
			m, err = c.try.TryRead(b[c.w:])
			if m == 0 && err == nil {
				return false, errNotYet
			}
		}
		c.w += m
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// Not sticky: what arrived stays buffered, the stream
				// goes on after a new deadline.
				return c.w-c.r >= k, err
			}
			c.rerr = err
			if c.w-c.r >= k {
				return true, nil
			}
			if err == io.EOF && c.w > c.r {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
	}
	return true, nil
}

// afterRead moves an emptied buffer back to the small size after
// shrinkAfter reads in a row that brought less than it.
func (c *conn) afterRead(n int) {
	if c.buf == nil || c.r != c.w {
		return
	}
	c.r, c.w = 0, 0
	if len(*c.buf) != largeRead {
		return
	}
	if n >= smallRead {
		c.smallRun = 0
		return
	}
	if c.smallRun++; c.smallRun >= shrinkAfter {
		largeBufs.Put(c.buf)
		c.buf = smallBufs.Get().(*[]byte)
		c.smallRun = 0
	}
}

// readRaw reads what is buffered, then from the transport (security zero).
func (c *conn) readRaw(p []byte) (int, error) {
	if c.w > c.r {
		n := copy(p, (*c.buf)[c.r:c.w])
		c.r += n
		return n, nil
	}
	if c.rerr != nil {
		return 0, c.rerr
	}
	return c.Conn.Read(p)
}

// readResponse sends the request if no Write did within
// reqconn.FirstWriteWait (so that the app's first bytes go out with the
// header in one write: one TLS record, one WebSocket message, early data),
// then reads and checks the response header.
func (c *conn) readResponse() error {
	if !c.reqSent.Load() {
		reqconn.WaitFirstWrite(c.sent, c.closed)
	}
	if err := c.sendRequest(); err != nil {
		return err
	}
	key, iv := respKeys(&c.rq)
	if ok, err := c.fill(respHeaderLen, true); !ok {
		return c.respError(err)
	}
	n, err := openRespLen(&key, &iv, (*c.buf)[c.r:c.r+respHeaderLen])
	if err != nil {
		return c.fail(fmt.Errorf("vmess: response from %s: %w", c.client.addr, err))
	}
	c.r += respHeaderLen
	if ok, err := c.fill(n, true); !ok {
		return c.respError(err)
	}
	if err := openRespHeader(&key, &iv, c.rq.v, (*c.buf)[c.r:c.r+n]); err != nil {
		return c.fail(fmt.Errorf("vmess: response from %s: %w", c.client.addr, err))
	}
	c.r += n
	c.resp = true
	if !c.raw {
		c.rbody = newBody(c.rq.security, c.rq.opt, &key, &iv)
	}
	return nil
}

// respError describes a failure to read the response header; a stream
// that ends there is how a server refuses an unknown user.
func (c *conn) respError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		err = fmt.Errorf("vmess: %s closed the stream without a response (unknown user id, or not a VMess server): %w", c.client.addr, err)
	} else {
		err = fmt.Errorf("vmess: response from %s: %w", c.client.addr, err)
	}
	c.rerr = err
	return err
}

// Close closes the stream.
func (c *conn) Close() error {
	return c.client.flows.CloseOnce(&c.closeOnce, c, func() error {
		close(c.closed)
		return c.Conn.Close()
	})
}
