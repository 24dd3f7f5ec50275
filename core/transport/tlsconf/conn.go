package tlsconf

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a TLS client connection tuned for relaying bulk data: crypto/tls,
// or uTLS when the node names a ClientHello fingerprint (Stream). It
// changes two things about the socket under TLS:
//
//   - A Write of more than one record's worth (16 KiB) is cut by crypto/tls
//     into several records, each written to the socket in its own syscall.
//     Conn gathers the records of one Write and writes them in one syscall
//     per 64 KiB (maxBatch): a 60 KiB WebSocket frame is four records, one
//     socket write and one TCP segment (on loopback) or GSO super-packet
//     instead of four.
//   - TryRead reads only what is there without waiting: plaintext already
//     decrypted, and records the kernel has already received. A reader that
//     got data from Read can go on with TryRead until it has a full buffer,
//     and hand the next layer one large chunk instead of one record's worth
//     (16 KiB) per call: fewer writes downstream.
//   - While a transfer keeps records waiting, crypto/tls's record buffer
//     grows to BigRecordBuffer, so that one socket read brings several
//     records rather than one or two: see grow.go.
//   - While no data is in flight, it holds no record buffer: see idle.go.
//
// Close and the rest are the TLS engine's.
type Conn struct {
	engine
	rec  records // the engine's record buffers (idle.go)
	sock *sockConn
	wm   sync.Mutex // one batch at a time

	handshook bool // a Read succeeded, so the handshake is done; the reader's own
	// ended: the engine returned EOF or a lasting error, which it now
	// returns on every Read without touching the socket; the reader's own.
	// A peer's close_notify with its TCP side still open (sing-box's Trojan
	// server half-closing) leaves the socket quiet for good: a wait for it
	// would never end.
	ended     bool
	waited    bool // WaitRead has just waited: the next Read need not; the reader's own
	idleMu    sync.Mutex
	waiting   bool        // the reader waits for the socket in waitQuiet
	idleTimer *time.Timer // drops the record buffer after idleRelease of waiting
	released  atomic.Int64

	grow    *Grown      // the budget of large record buffers; nil: none
	wantBig bool        // a read left a whole record waiting; the reader's own
	big     atomic.Bool // the record buffer is large, counted in grow
	fitted  bool        // the record buffer was fitted to one record (fitRecords); the reader's own
}

// Read reads as crypto/tls does, but waits for a quiet socket without
// holding crypto/tls's record buffer (waitQuiet).
func (c *Conn) Read(p []byte) (int, error) {
	if c.handshook && len(p) > 0 {
		if !c.waited {
			c.waitQuiet()
		}
		c.growRecords()
	}
	c.waited = false
	n, err := c.engine.Read(p)
	if err == nil {
		c.handshook = true
		c.noteBacklog()
	} else {
		c.noteEnd(err)
	}
	return n, err
}

// noteEnd sets ended when err, from the engine's Read, is one it keeps
// returning: anything but a timeout or wouldBlock, which crypto/tls
// retries (a temporary net.Error).
func (c *Conn) noteEnd(err error) {
	if ne, ok := err.(net.Error); ok && (ne.Timeout() || isWouldBlock(err)) {
		return
	}
	c.ended = true
}

func isWouldBlock(err error) bool {
	_, ok := err.(wouldBlock)
	return ok
}

// engine is the TLS implementation under Conn: *tls.Conn or *utls.UConn.
type engine interface {
	net.Conn
	Handshake() error
	HandshakeContext(context.Context) error
}

// Client wraps raw in crypto/tls with cfg. The handshake runs on the first
// Read or Write, or by HandshakeContext.
func Client(raw net.Conn, cfg *tls.Config) *Conn {
	s := newSockConn(raw)
	tc := tls.Client(s, cfg)
	return &Conn{engine: tc, rec: stdRecords(tc), sock: s}
}

// ConnectionState returns the engine's connection state in crypto/tls's
// terms (uTLS's has the same fields).
func (c *Conn) ConnectionState() tls.ConnectionState {
	switch e := c.engine.(type) {
	case *tls.Conn:
		return e.ConnectionState()
	case interface{ stdState() tls.ConnectionState }:
		return e.stdState()
	}
	return tls.ConnectionState{}
}

// minBatch is the largest Write that goes straight through: crypto/tls
// starts each connection with records of about one TCP segment (dynamic
// record sizing), so more than that may be several records.
const minBatch = 1 << 10

// maxBatch is the most plaintext one socket write carries: four full
// records, whose batch fits the pooled buffer. A larger Write is written
// in several batches: gathered whole, a 240 KiB Write took a fresh batch
// buffer each time, and 3.5x the CPU per byte of 60 KiB ones (measured on
// loopback, uTLS, 2 vCPUs).
const maxBatch = 64 << 10

// Write encrypts p and writes its records in one socket write per
// maxBatch bytes. Small writes go straight through.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) <= minBatch {
		return c.engine.Write(p)
	}
	c.wm.Lock()
	defer c.wm.Unlock()
	n := 0
	for n < len(p) {
		c.sock.begin()
		m, err := c.engine.Write(p[n:min(len(p), n+maxBatch)])
		if ferr := c.sock.flush(); err == nil && ferr != nil {
			return n, ferr // this batch did not go out
		}
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TryRead reads into p what can be read without waiting for the network:
// the rest of a record already decrypted, then whole records that are
// already buffered (by crypto/tls or, on Unix, by the kernel). It returns
// (0, nil) when nothing is available at once. Errors that TryRead does not
// see are reported by the next Read. TryRead must not run concurrently with
// Read.
func (c *Conn) TryRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.growRecords()
	c.sock.noWait.Store(true)
	n, err := c.engine.Read(p)
	c.sock.noWait.Store(false)
	c.noteBacklog()
	if isWouldBlock(err) {
		err = nil
	} else if err != nil {
		c.noteEnd(err)
	}
	return n, err
}

// batchBufs holds the buffers records are gathered in: a 64 KiB Write plus
// the records' overhead fits without growing.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 66<<10); return &b }}

// maxPooledBatch bounds what goes back to batchBufs: a rare huge Write
// should not leave a huge buffer in the pool.
const maxPooledBatch = 128 << 10

// sockConn is the socket under TLS. Between begin and flush its Writes
// gather what TLS writes instead of writing it; otherwise they write
// through. While noWait is set its Reads return what the kernel has
// without waiting, or wouldBlock.
type sockConn struct {
	net.Conn

	mu  sync.Mutex // serialises socket writes, so gathered and direct writes keep their order
	buf *[]byte    // non-nil between begin and flush
	err error      // a failed flush: later writes fail too

	noWait atomic.Bool
	nb     nonblockReader // reads without waiting; zero when the socket cannot
	filled bool           // the last Read filled its buffer; the reader's own
}

func newSockConn(raw net.Conn) *sockConn {
	s := &sockConn{Conn: raw}
	s.nb.init(raw)
	return s
}

// Read reads from the socket; with noWait set, only what it holds now.
func (s *sockConn) Read(p []byte) (int, error) {
	if s.noWait.Load() {
		n := s.nb.read(p)
		s.filled = n == len(p)
		if n > 0 {
			return n, nil
		}
		return 0, wouldBlock{}
	}
	n, err := s.Conn.Read(p)
	s.filled = n == len(p)
	return n, err
}

// Write gathers p while a batch is open and writes it otherwise.
func (s *sockConn) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	if s.buf != nil {
		*s.buf = append(*s.buf, p...)
		return len(p), nil
	}
	return s.Conn.Write(p)
}

// begin opens a batch.
func (s *sockConn) begin() {
	bp := batchBufs.Get().(*[]byte)
	*bp = (*bp)[:0]
	s.mu.Lock()
	s.buf = bp
	s.mu.Unlock()
}

// flush closes the batch and writes what it gathered.
func (s *sockConn) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	bp := s.buf
	s.buf = nil
	if s.err == nil && len(*bp) > 0 {
		if _, err := s.Conn.Write(*bp); err != nil {
			s.err = err
		}
	}
	if cap(*bp) <= maxPooledBatch {
		batchBufs.Put(bp)
	}
	return s.err
}

// wouldBlock is what the socket's Read returns under TryRead when it holds
// nothing. crypto/tls treats a temporary net.Error as retryable: the
// connection stays usable and the partial record it may have read so far
// stays in its buffer.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "tlsconf: no data without waiting" }
func (wouldBlock) Timeout() bool   { return false }
func (wouldBlock) Temporary() bool { return true }

var _ net.Error = wouldBlock{}

// CanDetach reports whether DetachRead and RawWrite work on this
// connection: the engine's record buffers were found (see idle.go).
func (c *Conn) CanDetach() bool { return c.rec.ok() }

// DetachRead ends reading through TLS, for a protocol that has agreed with
// the server to go on without the outer TLS layer (Vision's direct copy):
// it returns what the engine holds that the caller has not read, the
// decrypted plaintext and then the received bytes after the last record
// (which the peer sent raw), and the socket, to read from directly from
// then on. Read and TryRead must not be called afterwards. It needs
// CanDetach.
func (c *Conn) DetachRead() (buffered []byte, sock io.Reader) {
	if c.rec.in.Len() > 0 {
		buffered = make([]byte, c.rec.in.Len())
		c.rec.in.Read(buffered)
	}
	buffered = append(buffered, c.rec.raw.Next(c.rec.raw.Len())...)
	*c.rec.raw = bytes.Buffer{}
	*c.rec.in = bytes.Reader{}
	c.dropBig()
	return buffered, c.sock.Conn
}

// RawWrite writes p to the socket under TLS unencrypted, in order with
// TLS's own writes: for a protocol whose peer reads it raw from then on
// (Vision's direct copy). Later Writes through TLS would corrupt the
// stream.
func (c *Conn) RawWrite(p []byte) (int, error) { return c.sock.Write(p) }

// CloseRaw closes the socket without a TLS close_notify, which a peer
// that reads the stream raw would take for data.
func (c *Conn) CloseRaw() error {
	c.dropBig()
	return c.sock.Conn.Close()
}

// CloseRawWrite shuts down the socket's writing side without a TLS
// close_notify, for a peer that reads the stream raw (see CloseRaw).
func (c *Conn) CloseRawWrite() error {
	if cw, ok := c.sock.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Close closes the connection as the engine does.
func (c *Conn) Close() error {
	c.dropBig()
	return c.engine.Close()
}

// CloseWrite sends close_notify and shuts down the socket's writing side,
// as crypto/tls's CloseWrite does.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.engine.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
