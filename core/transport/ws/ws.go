// Package ws is the WebSocket transport that VLESS, VMess and Trojan run
// over: it upgrades a connection the caller dialed (plain TCP or
// already TLS-wrapped) and returns a net.Conn whose writes are binary
// messages and whose reads are the bytes of the server's messages, message
// boundaries ignored.
//
// It also implements the early data of Xray and sing-box: with
// Config.MaxEarlyData N > 0 the upgrade request waits for the first Write and
// carries up to N bytes of it, base64url without padding, in the
// Sec-WebSocket-Protocol header (or the one Config.EarlyDataHeader names),
// so the proxy's request reaches the server with the upgrade, saving a
// round trip.
//
// Framing and the handshake come from github.com/gobwas/ws: it reads
// without allocating and runs the upgrade over any io.ReadWriter with our
// Host header and subprotocols (the comparison: docs/benchmarks.md,
// "WebSocket libraries"). It accepts a 101 answer that echoes our
// Sec-WebSocket-Protocol (Xray) or none (sing-box).
//
// Over TLS, what a relay pays per byte is mostly syscalls, so the data path
// avoids small ones. On a transport that can TryRead (tlsconf.Conn), Read
// takes frames straight from the TLS plaintext into the caller's buffer and
// goes on across frames and records with what has already arrived: the
// relay writes up to its whole buffer (60 KiB) to the app per call, not one
// record (16 KiB). WriteFrame (relay.FrameWriter) builds a frame around the
// payload in the relay's buffer, masking it in place; Write masks while
// copying (maskCopy). With the TLS layer's batching, a 60 KiB relay read
// leaves as one socket write.
package ws

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"

	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// Config is what the upgrade request says.
type Config struct {
	// Host is the Host header and the host part of the request URL
	// (required).
	Host string
	// Path is the request path, with a query if any; empty means "/".
	Path string
	// Headers are extra request headers. A "Host" entry is ignored: Host
	// says that.
	Headers map[string]string
	// MaxEarlyData, when > 0, defers the upgrade to the first Write and
	// sends up to that many bytes of it in the request.
	MaxEarlyData int
	// EarlyDataHeader names the header carrying early data; empty means
	// Sec-WebSocket-Protocol.
	EarlyDataHeader string
}

const (
	// readBufferSize is the buffered reader over a transport that cannot
	// TryRead (plain TCP); a TLS record is at most 16 KiB, so a larger
	// one rarely fills.
	readBufferSize = 16 << 10
	// writeChunk is how much payload one write to the transport carries;
	// larger messages are masked and written in chunks of this size. It
	// holds the relay's largest read (60 KiB) in one frame, which the TLS
	// layer writes to the socket in one syscall.
	writeChunk = 64 << 10
	// maxControl is the largest control frame payload (RFC 6455 5.5).
	maxControl = 125
)

// writeBufs holds frame buffers: header plus one chunk of masked payload.
var writeBufs = sync.Pool{New: func() any {
	b := make([]byte, ws.MaxHeaderSize+writeChunk)
	return &b
}}

// tryReader is a transport that can read without waiting for the network
// (tlsconf.Conn): TryRead returns what is available at once, (0, nil) when
// nothing is.
type tryReader interface {
	TryRead(p []byte) (int, error)
}

// Client makes c a WebSocket client connection. Without early data it
// performs the upgrade before returning, bounded by ctx; with early data it
// returns at once and the upgrade happens on the first Write (or on a Read
// that comes before any Write, then without early data). The returned
// Conn owns c.
func Client(ctx context.Context, c net.Conn, cfg Config) (*Conn, error) {
	if cfg.Host == "" {
		return nil, errors.New("ws: no host")
	}
	path := cfg.Path
	if path == "" {
		path = "/"
	} else if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse("ws://" + cfg.Host + path)
	if err != nil {
		return nil, fmt.Errorf("ws: request URL for %s: %w", cfg.Host, err)
	}
	edHeader := http.CanonicalHeaderKey(cfg.EarlyDataHeader)
	if edHeader == "" {
		edHeader = "Sec-Websocket-Protocol"
	}
	conn := &Conn{
		raw:      c,
		url:      u,
		target:   cfg.Host + path,
		maxEarly: cfg.MaxEarlyData,
		edHeader: edHeader,
	}
	for k, v := range cfg.Headers {
		if strings.EqualFold(k, "Host") {
			continue
		}
		if conn.headers == nil {
			conn.headers = http.Header{}
		}
		conn.headers.Set(k, v)
	}
	if cfg.MaxEarlyData > 0 {
		return conn, nil
	}
	// ctx ending (its deadline included) interrupts the upgrade's I/O.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	err = conn.handshake(nil)
	if !stop() {
		// ctx ended during the upgrade; whatever it did to c, c is not
		// usable.
		return nil, fmt.Errorf("ws: upgrade to %s: %w", conn.target, ctx.Err())
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ws: upgrade to %s: %w", conn.target, ctx.Err())
		}
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return conn, nil
}

// Conn is a WebSocket client connection as a byte stream. Each Write is one
// binary message; Read returns the payload of data messages (binary, text
// or continuation alike) in order, answers pings, and reports io.EOF when
// the server closes. Reads and writes may run concurrently with each other.
type Conn struct {
	raw      net.Conn
	url      *url.URL
	target   string // host+path, for errors
	headers  http.Header
	maxEarly int
	edHeader string

	hsMu   sync.Mutex
	hsDone atomic.Bool
	hsErr  error
	lim    io.LimitedReader // under the upgrade's reader, and c.br's when gobwas made it

	rmu  sync.Mutex
	br   *bufio.Reader                       // over raw when raw is not a tryReader; nil otherwise
	try  tryReader                           // raw when it can TryRead; nil otherwise
	pre  []byte                              // what the upgrade read past the answer, read before raw (tryReader case)
	hdr  [ws.MaxHeaderSize + maxControl]byte // the next frame's header; a control frame's payload too
	hn   int                                 // bytes of hdr read so far
	left int64                               // payload bytes left in the current data frame
	// The server's frames should not be masked; when one is, rmask and
	// rmOff (the offset into it) unmask it, else rmOff is -1.
	rmask [4]byte
	rmOff int
	eof   bool
	rw    readwait.Waiter // Of(raw), once WaitRead needs it

	wmu    sync.Mutex
	closed bool                   // close frame sent
	hlen   headerLenWriter        // lives in Conn so that passing it to gobwas does not allocate
	whdr   [ws.MaxHeaderSize]byte // WriteFrame's header, built here for the same reason
}

// handshake sends the upgrade request, with early as early data when
// non-empty, and reads the answer. The caller holds hsMu or owns c alone.
func (c *Conn) handshake(early []byte) error {
	d := ws.Dialer{ReadBufferSize: readBufferSize, Host: c.url.Host}
	h := c.headers
	if len(early) > 0 {
		ed := base64.RawURLEncoding.EncodeToString(early)
		if c.edHeader == "Sec-Websocket-Protocol" {
			// As a subprotocol, so that gobwas accepts a server that
			// echoes it (Xray does).
			d.Protocols = []string{ed}
		} else {
			h = h.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set(c.edHeader, ed)
		}
	}
	if h != nil {
		d.Header = ws.HandshakeHeaderHTTP(h)
	}
	c.lim = io.LimitedReader{R: c.raw, N: maxResponseHead}
	br, _, err := d.Upgrade(struct {
		io.Reader
		io.Writer
	}{&c.lim, c.raw}, c.url)
	exhausted := c.lim.N <= 0
	c.lim.N = math.MaxInt64 // frames are not limited
	if err != nil {
		var se ws.StatusError
		if exhausted {
			err = fmt.Errorf("ws: upgrade to %s: answer longer than %d bytes", c.target, maxResponseHead)
		} else if errors.As(err, &se) {
			err = fmt.Errorf("ws: upgrade to %s: server answered %d", c.target, int(se))
		} else {
			err = fmt.Errorf("ws: upgrade to %s: %w", c.target, err)
		}
		c.hsErr = err
		c.hsDone.Store(true)
		return err
	}
	if tr, ok := c.raw.(tryReader); ok {
		// Frames are read straight from raw, without a buffer between: the
		// payload goes from TLS's plaintext into the caller's buffer. What
		// the upgrade read past the answer (rare: the server spoke first
		// and fast) is read first.
		c.try = tr
		if br != nil {
			b, _ := br.Peek(br.Buffered())
			c.pre = append([]byte(nil), b...)
			ws.PutReader(br)
		}
	} else {
		if br == nil {
			br = bufio.NewReaderSize(c.raw, readBufferSize)
		}
		// br (from gobwas's pool when the server sent data right after
		// the answer) reads from c.raw; it is ours now.
		c.br = br
	}
	c.hsDone.Store(true)
	return nil
}

// maxResponseHead bounds the upgrade answer (status line and headers, and
// whatever the server sent right behind them that the upgrade's buffer
// took in). gobwas reads a line of any length, so without a bound a server,
// or anyone on the path of a plain ws:// connection, could fill the memory
// with one endless header line.
const maxResponseHead = 64 << 10

// ensureHandshake runs the upgrade, if not yet done, with early data from p
// (nil from Read). It returns how many bytes of p went as early data.
func (c *Conn) ensureHandshake(p []byte) (int, error) {
	c.hsMu.Lock()
	defer c.hsMu.Unlock()
	if c.hsDone.Load() {
		return 0, c.hsErr
	}
	n := min(len(p), c.maxEarly)
	if err := c.handshake(p[:n]); err != nil {
		return 0, err
	}
	return n, nil
}

// Read reads payload bytes of the server's data messages. The first bytes
// may wait for the network; after them Read goes on, across frames and TLS
// records, with what is available at once, so that a caller with a large p
// gets everything that has arrived in one call (fewer, larger writes
// downstream) while one that waits for a reply is not held back.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.hsDone.Load() {
		if _, err := c.ensureHandshake(nil); err != nil {
			return 0, err
		}
	} else if c.hsErr != nil {
		return 0, c.hsErr
	}
	return c.read(p, true)
}

// TryRead reads what Read would, but only what is there at once, (0, nil)
// when nothing is (readwait.TryReader). Before the upgrade it reads
// nothing.
func (c *Conn) TryRead(p []byte) (int, error) {
	if !c.hsDone.Load() || c.hsErr != nil {
		return 0, nil
	}
	return c.read(p, false)
}

// read reads payload bytes into p, waiting for the first ones when wait
// is set and never after them.
func (c *Conn) read(p []byte, wait bool) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	n := 0
	for n < len(p) {
		wait := wait && n == 0
		if c.left == 0 {
			if c.eof {
				break
			}
			ok, err := c.nextFrame(wait)
			if err != nil {
				return n, err
			}
			if !ok {
				break // the next header has not arrived yet
			}
			continue
		}
		q := p[n:]
		if int64(len(q)) > c.left {
			q = q[:c.left]
		}
		m, err := c.readRaw(q, wait)
		if m > 0 {
			if c.rmOff >= 0 {
				ws.Cipher(q[:m], c.rmask, c.rmOff)
				c.rmOff += m
			}
			c.left -= int64(m)
			n += m
		}
		if err != nil {
			if err == io.EOF && c.left > 0 {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		if m == 0 && !wait {
			break
		}
	}
	if n == 0 && c.eof {
		return 0, io.EOF
	}
	return n, nil
}

// WaitRead waits until a Read has something to return, without reading
// (readwait.Waiter): at once when bytes past the upgrade or in the reader
// are there, else on the transport. Before the upgrade it cannot wait.
func (c *Conn) WaitRead() bool {
	if !c.hsDone.Load() || c.hsErr != nil {
		return false
	}
	c.rmu.Lock()
	ready := c.eof || len(c.pre) > 0 || (c.br != nil && c.br.Buffered() > 0)
	if c.rw == nil {
		c.rw = readwait.Of(c.raw)
	}
	rw := c.rw
	c.rmu.Unlock()
	return ready || (rw != nil && rw.WaitRead())
}

// readRaw reads frame bytes into p: what the upgrade left over first, then
// from the transport; when wait is false, only what is available at once
// ((0, nil) when nothing is). c.rmu is held.
func (c *Conn) readRaw(p []byte, wait bool) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		if c.pre = c.pre[n:]; len(c.pre) == 0 {
			c.pre = nil
		}
		return n, nil
	}
	switch {
	case c.br != nil:
		if !wait {
			b := c.br.Buffered()
			if b == 0 {
				return 0, nil
			}
			p = p[:min(len(p), b)]
		}
		return c.br.Read(p)
	case wait:
		return c.raw.Read(p)
	default:
		return c.try.TryRead(p)
	}
}

// headerLen returns the length of a frame header from its first two bytes,
// plus the payload of a control frame, which is read with its header.
func headerLen(b0, b1 byte) int {
	n := 2
	switch b1 & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4
	}
	if b0&0x08 != 0 && b1&0x7f <= maxControl {
		n += int(b1 & 0x7f) // control frame: its payload too
	}
	return n
}

// nextFrame reads the next frame header (without wait: only if all of it
// is available, else it keeps what it read and returns false) and handles
// it: a data frame sets c.left, a control frame is answered. c.rmu is held.
func (c *Conn) nextFrame(wait bool) (bool, error) {
	need := 2
	for {
		if c.hn >= 2 {
			need = headerLen(c.hdr[0], c.hdr[1])
		}
		if c.hn >= need {
			break
		}
		m, err := c.readRaw(c.hdr[c.hn:need], wait)
		c.hn += m
		if err != nil {
			if err == io.EOF && c.hn > 0 {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
		if m == 0 && !wait {
			return false, nil
		}
	}
	h := c.hdr[:c.hn]
	c.hn = 0
	fin, rsv, op := h[0]&0x80 != 0, h[0]>>4&7, ws.OpCode(h[0]&0x0f)
	masked, length := h[1]&0x80 != 0, int64(h[1]&0x7f)
	h = h[2:]
	switch length {
	case 126:
		length, h = int64(binary.BigEndian.Uint16(h)), h[2:]
	case 127:
		u := binary.BigEndian.Uint64(h)
		if u > 1<<62 {
			return false, fmt.Errorf("ws: %s: frame length %d", c.target, u)
		}
		length, h = int64(u), h[8:]
	}
	var mask [4]byte
	if masked {
		copy(mask[:], h)
		h = h[4:]
	}
	if rsv != 0 {
		return false, fmt.Errorf("ws: %s: frame with reserved bits %03b", c.target, rsv)
	}
	if !op.IsControl() {
		if !op.IsData() && op != ws.OpContinuation {
			return false, fmt.Errorf("ws: %s: frame with reserved opcode %d", c.target, op)
		}
		c.rmOff = -1
		if masked {
			c.rmask, c.rmOff = mask, 0
		}
		c.left = length
		return true, nil
	}
	if length > maxControl || !fin {
		return false, fmt.Errorf("ws: %s: malformed control frame", c.target)
	}
	body := h[:length]
	if masked {
		ws.Cipher(body, mask, 0)
	}
	switch op {
	case ws.OpPing:
		return true, c.writeFrame(ws.OpPong, body)
	case ws.OpClose:
		c.eof = true
		// Answer with the same status code, as RFC 6455 5.5.1 asks; a
		// body too short to hold one (1 byte, a protocol error) is not
		// echoed.
		if len(body) < 2 {
			body = nil
		}
		body = body[:min(len(body), 2)]
		c.writeFrame(ws.OpClose, body)
		return true, nil
	}
	return true, nil // pong
}

// Write sends p as one binary message.
func (c *Conn) Write(p []byte) (int, error) {
	done := 0
	if !c.hsDone.Load() {
		n, err := c.ensureHandshake(p)
		if err != nil {
			return 0, err
		}
		done = n
		if done == len(p) && done > 0 {
			return done, nil
		}
	} else if c.hsErr != nil {
		return 0, c.hsErr
	}
	if err := c.writeFrame(ws.OpBinary, p[done:]); err != nil {
		return done, err
	}
	return len(p), nil
}

// FrontHeadroom is the room WriteFrame needs in front of the payload: the
// largest client frame header.
func (c *Conn) FrontHeadroom() int { return ws.MaxHeaderSize }

// WriteFrame sends b[FrontHeadroom():] as one binary message, like Write,
// but builds the frame in b: the header goes in front of the payload and
// the payload is masked in place, so that it is not copied. b's contents
// are garbage afterwards. It returns the payload bytes written.
func (c *Conn) WriteFrame(b []byte) (int, error) {
	if len(b) < ws.MaxHeaderSize {
		return 0, errors.New("ws: WriteFrame without headroom")
	}
	p := b[ws.MaxHeaderSize:]
	if !c.hsDone.Load() || c.hsErr != nil || len(p) > writeChunk {
		return c.Write(p) // early data, errors, huge writes: the usual way
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	mask := newMask()
	h := ws.Header{Fin: true, OpCode: ws.OpBinary, Masked: true, Mask: mask, Length: int64(len(p))}
	if err := ws.WriteHeaderBuffer(&c.hlen, h, c.whdr[:]); err != nil {
		return 0, err
	}
	hl := int(c.hlen)
	copy(b[ws.MaxHeaderSize-hl:], c.whdr[:hl])
	ws.Cipher(p, mask, 0)
	if _, err := c.raw.Write(b[ws.MaxHeaderSize-hl:]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// newMask returns a random frame mask.
func newMask() [4]byte {
	r := rand.Uint32()
	return [4]byte{byte(r), byte(r >> 8), byte(r >> 16), byte(r >> 24)}
}

// writeFrame writes one masked frame carrying p, in chunks of writeChunk.
func (c *Conn) writeFrame(op ws.OpCode, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	if op == ws.OpClose {
		c.closed = true
	}
	bp := writeBufs.Get().(*[]byte)
	defer writeBufs.Put(bp)
	buf := *bp
	mask := newMask()
	h := ws.Header{Fin: true, OpCode: op, Masked: true, Mask: mask, Length: int64(len(p))}
	if err := ws.WriteHeaderBuffer(&c.hlen, h, buf[:ws.MaxHeaderSize]); err != nil {
		return err
	}
	off := int(c.hlen)
	for done := 0; ; {
		n := min(len(buf)-off, len(p)-done)
		maskCopy(buf[off:], p[done:done+n], mask, done)
		if _, err := c.raw.Write(buf[:off+n]); err != nil {
			return err
		}
		done += n
		off = 0
		if done == len(p) {
			return nil
		}
	}
}

// headerLenWriter records how many bytes gobwas wrote into the buffer it
// was given: the frame header is built in place at the start of the write
// buffer.
type headerLenWriter int

func (w *headerLenWriter) Write(p []byte) (int, error) {
	*w = headerLenWriter(len(p))
	return len(p), nil
}

// Close sends a close frame when the connection was upgraded and closes the
// underlying connection.
func (c *Conn) Close() error {
	if c.hsDone.Load() && c.hsErr == nil {
		c.raw.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.writeFrame(ws.OpClose, []byte{byte(ws.StatusNormalClosure >> 8), byte(ws.StatusNormalClosure & 0xff)})
	}
	return c.raw.Close()
}

// LocalAddr returns the underlying connection's local address.
func (c *Conn) LocalAddr() net.Addr { return c.raw.LocalAddr() }

// RemoteAddr returns the underlying connection's remote address.
func (c *Conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets the underlying connection's deadlines.
func (c *Conn) SetDeadline(t time.Time) error { return c.raw.SetDeadline(t) }

// SetReadDeadline sets the underlying connection's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.raw.SetReadDeadline(t) }

// SetWriteDeadline sets the underlying connection's write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }
