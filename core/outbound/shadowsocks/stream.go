package shadowsocks

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// bufSize is the size of the pooled buffers a stream seals into and opens
// in: one 2022 chunk of the largest payload with its length chunk, or the
// request's headers, fit with room to spare.
const bufSize = 68 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { bufPool.Put(b) }

// errAuth is what a chunk that fails authentication means to a user.
var errAuth = errors.New("authentication failed (wrong password or method, or the data was altered)")

// streamConn is one Shadowsocks TCP stream over a transport (TCP, or a
// plugin's obfuscation or WebSocket). Writes seal whole chunks in place in
// one pooled buffer and send them with one write; reads fill one pooled
// buffer from the transport and open the chunks in place. Neither side
// allocates per chunk, and an idle stream holds no pooled buffer.
type streamConn struct {
	net.Conn // the transport
	c        *Client
	dst      flow.Addr
	maxChunk int // largest payload of one chunk

	// Write side, under wmu.
	wmu     sync.Mutex
	enc     cipher.AEAD
	wnonce  [xnonceLen]byte
	reqSalt [32]byte
	reqSent atomic.Bool
	sent    chan struct{} // closed once the request went out (or failed)
	werr    error

	// Read side: one reader at a time. An idle stream waits on small and
	// holds no pooled buffer; one in a bulk transfer keeps its buffer.
	rmu       sync.Mutex
	dec       cipher.AEAD
	rnonce    [xnonceLen]byte
	rbuf      *[]byte       // nil while idle
	r, w      int           // unread ciphertext is rbuf[r:w]
	pend      []byte        // opened plaintext not yet returned, inside rbuf
	rerr      error         // a transport error that came with data
	bulk      bool          // the last transport read was a big one (bulkRead)
	rerrLater error         // a chunk's failure found after data was returned
	readers   readwait.Lazy // Conn's; its TryReader nil: the transport cannot read without waiting
	nextLen   int           // the opened length of the next chunk, when lenOpen
	lenOpen   bool          // nextLen is read (it may be 0: an empty chunk)
	dry       bool          // Lend's TryRead of the transport found nothing: a TryRead right after it does not ask again
	small     [64]byte
	respDone  bool

	closeOnce sync.Once
	closed    chan struct{}
}

func newStreamConn(tr net.Conn, c *Client, dst flow.Addr) *streamConn {
	s := &streamConn{Conn: tr, c: c, dst: dst, sent: make(chan struct{}), closed: make(chan struct{})}
	s.maxChunk = maxPayloadAEAD
	if c.m.is2022 {
		s.maxChunk = maxPayload2022
	}
	return s
}

// halfCloser is a streamConn on a transport that can end its sending half
// (plain TCP): the relay passes an app's EOF on through it.
type halfCloser struct{ *streamConn }

// CloseWrite sends the request header if nothing was written yet, then
// ends the transport's sending half.
func (h halfCloser) CloseWrite() error {
	if !h.reqSent.Load() {
		if _, err := h.Write(nil); err != nil {
			return err
		}
	}
	return h.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

// SoftCloseWrite reports that the server may not pass the FIN on
// (relay.SoftCloser): Xray's Shadowsocks 2022 inbound never did, and
// sing-box's client as well as skiff then held the flow open until Xray's
// idle time-out (300 s). The reply still comes under the relay's idle
// limit.
func (h halfCloser) SoftCloseWrite() bool { return true }

// Write seals p into chunks and writes them, the request header in front
// of the first. Big writes go out in as few transport writes as the pooled
// buffer allows (one for a relay's 60 KiB).
func (s *streamConn) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.werr != nil {
		return 0, s.werr
	}
	bp := getBuf()
	defer putBuf(bp)
	buf := (*bp)[:0]
	done, pending := 0, 0 // bytes of p written, and sealed into buf
	if !s.reqSent.Load() {
		var err error
		buf, pending, err = s.appendRequest(buf, p)
		if err != nil {
			s.failWrite(err)
			return 0, s.werr
		}
		p = p[pending:]
	}
	for {
		for len(p) > 0 && bufSize-len(buf) > 2+2*tagLen {
			n := min(len(p), s.maxChunk, bufSize-len(buf)-2-2*tagLen)
			buf = s.sealChunk(buf, p[:n])
			p = p[n:]
			pending += n
		}
		if len(buf) == 0 {
			return done, nil
		}
		if _, err := s.Conn.Write(buf); err != nil {
			s.failWrite(fmt.Errorf("shadowsocks: write to %s: %w", s.c.addr, err))
			return done, s.werr
		}
		if !s.reqSent.Load() {
			s.reqSent.Store(true)
			close(s.sent)
		}
		done += pending
		pending = 0
		buf = buf[:0]
		if len(p) == 0 {
			return done, nil
		}
	}
}

// FrontHeadroom, TailRoom and WriteFrame make the stream a
// relay.TailRoomer: the relay reads the payload into its buffer between a
// chunk's sealed length and its tag, and WriteFrame seals it there and
// writes it, instead of copying it into a pooled buffer of the stream's
// (the one copy left of every byte sent). A payload that does not fit one
// chunk, and the first write (it carries the request header), take Write's
// way.
func (s *streamConn) FrontHeadroom() int { return 2 + tagLen }

// TailRoom: see FrontHeadroom.
func (s *streamConn) TailRoom() int { return tagLen }

// WriteFrame writes b[2+tagLen:len(b)-tagLen] as Write would, sealing it
// in place in b.
func (s *streamConn) WriteFrame(b []byte) (int, error) {
	n := len(b) - 2 - 2*tagLen
	if n < 0 {
		return 0, errors.New("shadowsocks: WriteFrame without head and tail room")
	}
	if n == 0 || n > s.maxChunk || !s.reqSent.Load() {
		return s.Write(b[2+tagLen : 2+tagLen+n])
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.werr != nil {
		return 0, s.werr
	}
	s.sealInPlace(b, n)
	if _, err := s.Conn.Write(b); err != nil {
		s.failWrite(fmt.Errorf("shadowsocks: write to %s: %w", s.c.addr, err))
		return 0, s.werr
	}
	return n, nil
}

// failWrite records the stream's write error; a Read waiting for the
// request sees it.
func (s *streamConn) failWrite(err error) {
	s.werr = err
	if !s.reqSent.Load() {
		s.reqSent.Store(true)
		close(s.sent)
	}
}

// appendRequest appends the salt and the request header, with as much of
// p as fits in the header's chunk, and returns how much of p it took.
func (s *streamConn) appendRequest(buf, p []byte) ([]byte, int, error) {
	m, k := s.c.m, s.c.k
	salt := s.reqSalt[:m.keyLen]
	rand.Read(salt)
	var err error
	if s.enc, err = m.aeadFor(k.user, salt); err != nil {
		return nil, 0, fmt.Errorf("shadowsocks: %s: session key: %w", s.c.addr, err)
	}
	buf = append(buf, salt...)
	addrStart := len(buf)
	if !m.is2022 {
		// SIP004: the address is the stream's first bytes, in the
		// first chunk together with the first payload.
		a, err := appendAddr(buf[addrStart:addrStart], s.dst)
		if err != nil {
			return nil, 0, fmt.Errorf("shadowsocks: request to %s: %w", s.c.addr, err)
		}
		n := min(len(p), s.maxChunk-len(a))
		// Build addr+payload in place, then seal it as one chunk.
		off := len(buf)
		buf = buf[:off+2+tagLen+len(a)+n+tagLen]
		copy(buf[off+2+tagLen+len(a):], p[:n])
		copy(buf[off+2+tagLen:], a)
		s.sealInPlace(buf[off:], len(a)+n)
		return buf, n, nil
	}
	// SIP022: identity headers, fixed-length header, variable-length
	// header (address, padding, first payload).
	for i := range k.identity {
		var km [64]byte
		c := copy(km[:], k.identity[i])
		c += copy(km[c:], salt)
		var sub [32]byte
		deriveKey(sub[:m.keyLen], ctxIdentity, km[:c])
		b, err := newBlock(sub[:m.keyLen])
		if err != nil {
			return nil, 0, err
		}
		off := len(buf)
		buf = buf[:off+16]
		b.Encrypt(buf[off:], k.idHash[i][:])
	}
	var ab [maxAddrLen]byte
	a, err := appendAddr(ab[:0], s.dst)
	if err != nil {
		return nil, 0, fmt.Errorf("shadowsocks: request to %s: %w", s.c.addr, err)
	}
	pad := 0
	switch {
	case len(p) == 0:
		pad = 1 + randInt(maxPadding)
	case len(p) < maxPadding:
		pad = randInt(maxPadding - len(p) + 1)
	}
	n := min(len(p), maxPayload2022-len(a)-2-pad)
	varLen := len(a) + 2 + pad + n
	off := len(buf)
	buf = appendFixedRequest(buf, time.Now(), varLen)
	buf = buf[:off+fixedReqLen+tagLen]
	s.enc.Seal(buf[off:off], s.wnonce[:s.enc.NonceSize()], buf[off:off+fixedReqLen], nil)
	increment(s.wnonce[:s.enc.NonceSize()])
	off = len(buf)
	buf = buf[:off+varLen+tagLen]
	v := buf[off : off+varLen]
	copy(v, a)
	binary.BigEndian.PutUint16(v[len(a):], uint16(pad))
	clear(v[len(a)+2 : len(a)+2+pad])
	copy(v[len(a)+2+pad:], p[:n])
	s.enc.Seal(v[:0], s.wnonce[:s.enc.NonceSize()], v, nil)
	increment(s.wnonce[:s.enc.NonceSize()])
	return buf, n, nil
}

// sealChunk appends one chunk carrying payload: sealed length, sealed
// payload.
func (s *streamConn) sealChunk(buf, payload []byte) []byte {
	off := len(buf)
	buf = buf[:off+2+tagLen+len(payload)+tagLen]
	copy(buf[off+2+tagLen:], payload)
	s.sealInPlace(buf[off:], len(payload))
	return buf
}

// sealInPlace seals a chunk whose n plaintext bytes already sit at
// b[2+tagLen:]: it writes and seals the length, then seals the payload.
func (s *streamConn) sealInPlace(b []byte, n int) {
	ns := s.enc.NonceSize()
	binary.BigEndian.PutUint16(b, uint16(n))
	s.enc.Seal(b[:0], s.wnonce[:ns], b[:2], nil)
	increment(s.wnonce[:ns])
	pl := b[2+tagLen : 2+tagLen+n]
	s.enc.Seal(pl[:0], s.wnonce[:ns], pl, nil)
	increment(s.wnonce[:ns])
}

// Read returns the stream's plaintext. The first Read checks the response
// header (sending the request first if no Write did within
// reqconn.FirstWriteWait). A chunk that fits in p is opened straight into it, not
// in rbuf and then copied.
func (s *streamConn) Read(p []byte) (int, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.dry = false
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	for n == 0 {
		if len(s.pend) > 0 {
			n = copy(p, s.pend)
			s.pend = s.pend[n:]
			break
		}
		if err := s.rerrLater; err != nil {
			s.release()
			return 0, err
		}
		var err error
		if !s.respDone {
			err = s.readResponse()
		} else {
			n, err = s.readChunk(p)
		}
		if err != nil {
			s.release()
			return 0, err
		}
	}
	n = s.more(p, n)
	if len(s.pend) == 0 && s.r == s.w && !s.bulk {
		s.release()
	}
	return n, nil
}

// more opens into p[n:] the chunks that are there without waiting for the
// network: those whole in rbuf, then those the transport completes at
// once (TryRead), while p has room. A relay then makes one write to the
// app per buffer instead of one per chunk (a 2022 server's chunks are up
// to 64 KiB, a classic one's 16 KiB, and a socket read brings what
// arrived, often a chunk and a part). It stops before a chunk larger than
// p (see Lend). It returns the new n; a chunk that fails is kept in
// rerrLater for the next Read, after the bytes before it.
func (s *streamConn) more(p []byte, n int) int {
	for n < len(p) && len(s.pend) == 0 && s.rerrLater == nil {
		if !s.buffered() {
			if s.rerrLater != nil || !s.tryFill() {
				break
			}
			continue
		}
		if n > 0 && s.nextLen > len(p) {
			// It is larger than p: whole, a relay borrows it from rbuf
			// (Lend) instead of taking a copy.
			break
		}
		m, err := s.readChunk(p[n:])
		if err != nil {
			s.rerrLater = err
			break
		}
		n += m
	}
	return n
}

// tryFill reads into rbuf what the transport has at once (readwait
// TryRead) and reports whether it brought anything. It takes a pooled
// buffer if the stream holds none, and gives it back if nothing came.
func (s *streamConn) tryFill() bool {
	_, tr := s.readers.Of(s.Conn)
	if tr == nil || s.rerr != nil {
		return false
	}
	if s.dry {
		s.dry = false
		return false
	}
	if s.rbuf == nil {
		s.rbuf, s.r, s.w = getBuf(), 0, 0
	}
	if s.r > 0 && bufSize-s.w < bulkRead {
		s.w = copy(*s.rbuf, (*s.rbuf)[s.r:s.w])
		s.r = 0
	}
	m, err := tr.TryRead((*s.rbuf)[s.w:])
	s.w += m
	if m >= bulkRead {
		s.bulk = true
	}
	if err != nil {
		s.rerr = err
	}
	if m == 0 {
		s.release()
	}
	return m > 0
}

// TryRead returns what Read would without waiting for the network
// (readwait.TryReader): plaintext already opened, the chunks whole in
// rbuf, and those the transport completes at once. It returns (0, nil)
// when none is there, before the response header, and when the stream has
// failed or ended, which the next Read reports.
func (s *streamConn) TryRead(p []byte) (int, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if len(p) == 0 || !s.respDone {
		return 0, nil
	}
	n := copy(p, s.pend)
	s.pend = s.pend[n:]
	n = s.more(p, n)
	if len(s.pend) == 0 && s.r == s.w && !s.bulk {
		s.release()
	}
	return n, nil
}

// Lend opens the next chunk in place in rbuf and returns its plaintext,
// when it is longer than min and there whole without waiting for the
// network, or returns the opened rest of one when that is longer than min
// (relay.Lender): a 2022 server's chunks are up to 64 KiB, more than a
// relay's buffer takes, and a Read opened them in rbuf and copied them out
// whole. A smaller chunk is left to Read, which gathers several in the
// caller's buffer. A chunk that fails is kept for the next Read.
func (s *streamConn) Lend(min int) []byte {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.dry = false
	if !s.respDone {
		return nil
	}
	if len(s.pend) > min {
		p := s.pend
		s.pend = nil
		return p
	}
	if len(s.pend) > 0 {
		return nil
	}
	if !s.buffered() {
		if s.rerrLater != nil || (s.lenOpen && s.nextLen <= min) {
			return nil // not one to lend: reading more is left to Read
		}
		if s.rbuf != nil && s.r > 0 && bufSize-s.r < s.nextLen+tagLen {
			// Room for the whole chunk behind what is there of it.
			s.w = copy(*s.rbuf, (*s.rbuf)[s.r:s.w])
			s.r = 0
		}
		if !s.tryFill() {
			s.dry = true // the relay's TryRead that follows need not look again
			return nil
		}
		if !s.buffered() {
			return nil
		}
	}
	if s.nextLen <= min {
		return nil
	}
	n := s.nextLen
	s.nextLen, s.lenOpen = 0, false
	pl, err := s.open(n)
	if err != nil {
		s.rerrLater = s.readErr("read", err)
		return nil
	}
	return pl
}

// ReadWaiters offers the stream's TryRead only when its transport has one
// (readwait.Wrapper): otherwise it could return only what is already
// opened, and a relay would hand its buffer back and take it again before
// nearly every read for nothing.
func (s *streamConn) ReadWaiters() (readwait.Waiter, readwait.TryReader) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if _, tr := s.readers.Of(s.Conn); tr == nil {
		return s, nil
	}
	return s, s
}

// WaitRead waits for the server's next bytes without reading them, and
// without the read buffer when nothing is left in it (readwait.Waiter):
// an idle stream then holds no buffer, here or in the relay. It returns
// at once while part of a chunk is buffered: its rest is on the way, and
// the Read that waits for it, holding the relay's buffer for that while,
// saves the system call a wait on the transport would cost (a peek).
// Before the response header it cannot wait.
func (s *streamConn) WaitRead() bool {
	s.rmu.Lock()
	if !s.respDone {
		s.rmu.Unlock()
		return false
	}
	s.dry = false
	ready := len(s.pend) > 0 || s.w > s.r || s.rerr != nil || s.rerrLater != nil
	if !ready {
		s.release()
	}
	rw, _ := s.readers.Of(s.Conn)
	s.rmu.Unlock()
	return ready || (rw != nil && rw.WaitRead())
}

// buffered reports whether the next chunk is whole in rbuf, so that
// opening it does not wait for the network. It opens the chunk's length
// when that is there.
func (s *streamConn) buffered() bool {
	if s.rerrLater != nil {
		return false
	}
	if !s.lenOpen {
		if s.w-s.r < 2+tagLen {
			return false
		}
		if err := s.openLen(); err != nil {
			s.rerrLater = err
			return false
		}
	}
	return s.w-s.r >= s.nextLen+tagLen
}

// bulkRead is a transport read large enough to say that more is coming:
// the stream then keeps its read buffer between reads (one read system
// call per batch instead of two).
const bulkRead = 16 << 10

// release gives the read buffer back when nothing in it is left to read.
func (s *streamConn) release() {
	if s.rbuf != nil && len(s.pend) == 0 && s.r == s.w {
		putBuf(s.rbuf)
		s.rbuf, s.r, s.w = nil, 0, 0
	}
}

// fill makes at least k unread bytes available in rbuf. An idle stream
// waits on a small array, and takes a pooled buffer only once data came.
func (s *streamConn) fill(k int) error {
	for s.w-s.r < k {
		if s.rerr != nil {
			return s.rerr
		}
		if s.rbuf == nil {
			n, err := s.Conn.Read(s.small[:])
			if n == 0 {
				if err == nil {
					continue
				}
				return err
			}
			s.rbuf = getBuf()
			s.r, s.w = 0, copy(*s.rbuf, s.small[:n])
			s.rerr = err
			continue
		}
		if bufSize-s.r < k {
			s.w = copy(*s.rbuf, (*s.rbuf)[s.r:s.w])
			s.r = 0
		}
		n, err := s.Conn.Read((*s.rbuf)[s.w:])
		s.w += n
		s.bulk = n >= bulkRead
		if err != nil {
			s.rerr = err
		}
	}
	return nil
}

// open opens the sealed n bytes (with tag) at rbuf[r:] in place and
// consumes them.
func (s *streamConn) open(n int) ([]byte, error) {
	return s.openTo((*s.rbuf)[s.r:s.r], n)
}

// openTo opens the sealed n bytes (with tag) at rbuf[r:] into dst, which
// is rbuf[r:r] (in place) or has room for n bytes outside rbuf, and
// consumes them.
func (s *streamConn) openTo(dst []byte, n int) ([]byte, error) {
	b := (*s.rbuf)[s.r : s.r+n+tagLen]
	ns := s.dec.NonceSize()
	pl, err := s.dec.Open(dst[:0], s.rnonce[:ns], b, nil)
	increment(s.rnonce[:ns])
	if err != nil {
		return nil, errAuth
	}
	s.r += n + tagLen
	return pl, nil
}

// readChunk opens the next chunk: into p when it fits there (and returns
// its length), otherwise into pend, of which it copies what fits into p.
// EOF between chunks is the stream's orderly end. An empty chunk returns
// 0 bytes.
func (s *streamConn) readChunk(p []byte) (int, error) {
	if !s.lenOpen {
		if err := s.fill(2 + tagLen); err != nil {
			if err == io.EOF && s.w == s.r {
				return 0, io.EOF
			}
			return 0, s.readErr("read", err)
		}
		if err := s.openLen(); err != nil {
			return 0, err
		}
	}
	if err := s.fill(s.nextLen + tagLen); err != nil {
		return 0, s.readErr("read", err)
	}
	n := s.nextLen
	s.nextLen, s.lenOpen = 0, false
	if len(p) >= n {
		if _, err := s.openTo(p, n); err != nil {
			return 0, s.readErr("read", err)
		}
		return n, nil
	}
	pl, err := s.open(n)
	if err != nil {
		return 0, s.readErr("read", err)
	}
	c := copy(p, pl)
	s.pend = pl[c:]
	return c, nil
}

// openLen opens the length of the next chunk, which is in rbuf, into
// nextLen. A length of 0 is an empty chunk (a length and a tag over
// nothing): sing-box's server writes them on multiplexed streams.
func (s *streamConn) openLen() error {
	l, err := s.open(2)
	if err != nil {
		return s.readErr("read", err)
	}
	n := int(binary.BigEndian.Uint16(l))
	if n > s.maxChunk {
		return s.readErr("read", fmt.Errorf("chunk of %d bytes (at most %d)", n, s.maxChunk))
	}
	s.nextLen, s.lenOpen = n, true
	return nil
}

// readErr wraps a read failure with the server and the step.
func (s *streamConn) readErr(step string, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("shadowsocks: %s from %s: %w", step, s.c.addr, err)
}

// readResponse sends the request if no Write did yet, then reads the
// server's salt and, for 2022, checks the response header (type,
// timestamp, the echoed request salt, a fresh salt) before the first
// chunk.
func (s *streamConn) readResponse() error {
	if !s.reqSent.Load() {
		// The app's first bytes usually follow at once and then ride in
		// the header's chunk; without them the header goes alone (with
		// padding).
		reqconn.WaitFirstWrite(s.sent, s.closed)
		if _, err := s.Write(nil); err != nil {
			return err
		}
	}
	<-s.sent
	s.wmu.Lock()
	werr := s.werr
	s.wmu.Unlock()
	if werr != nil {
		return werr
	}
	m := s.c.m
	if err := s.fill(m.keyLen); err != nil {
		if err == io.EOF || errors.Is(err, syscall.ECONNRESET) {
			// What a server does with a request it cannot authenticate.
			return fmt.Errorf("shadowsocks: response from %s: the server closed the connection before answering (wrong password or method?): %w", s.c.addr, err)
		}
		return s.readErr("response", err)
	}
	salt := (*s.rbuf)[s.r : s.r+m.keyLen]
	var err error
	if s.dec, err = m.aeadFor(s.c.k.user, salt); err != nil {
		return fmt.Errorf("shadowsocks: %s: session key: %w", s.c.addr, err)
	}
	if m.is2022 && !s.c.salts.add(salt, time.Now()) {
		return fmt.Errorf("shadowsocks: response from %s: salt seen before (a replayed response)", s.c.addr)
	}
	s.r += m.keyLen
	s.respDone = true
	if !m.is2022 {
		// The first chunk into pend: Read hands it out.
		_, err := s.readChunk(nil)
		return err
	}
	hl := 1 + 8 + m.keyLen + 2
	if err := s.fill(hl + tagLen); err != nil {
		return s.readErr("response", err)
	}
	h, err := s.open(hl)
	if err != nil {
		return s.readErr("response", err)
	}
	n, err := parseFixedResponse(h, s.reqSalt[:m.keyLen], time.Now())
	if err != nil {
		return s.readErr("response", err)
	}
	if err := s.fill(n + tagLen); err != nil {
		return s.readErr("response", err)
	}
	if s.pend, err = s.open(n); err != nil {
		return s.readErr("response", err)
	}
	return nil
}

// Close closes the stream and its transport.
func (s *streamConn) Close() error {
	return s.c.flows.CloseOnce(&s.closeOnce, s, func() error {
		close(s.closed)
		return s.Conn.Close()
	})
}
