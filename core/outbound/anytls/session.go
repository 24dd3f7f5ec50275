package anytls

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/outbound"
)

// session is one authenticated TLS connection carrying streams.
type session struct {
	c    *Client
	conn net.Conn
	seq  uint64 // rises per client: the newest idle session is reused first

	wmu      sync.Mutex
	pkt      int  // writes so far, for the padding scheme
	settings bool // the settings frame went out
	scheme   *paddingScheme

	mu        sync.Mutex
	streams   map[uint32]*stream
	nextID    uint32
	idleSince time.Time
	err       error // why it ended; set once done is closed
	done      chan struct{}
	doneOnce  sync.Once

	heard atomic.Bool // a frame came from the server: it took the password
	v2    atomic.Bool // the server speaks version 2 (SYNACK, heartbeats)

	// The reader's own: a frame header read in part or whole ahead of
	// time (fill), hdrN bytes of it.
	hdr  [frameHeaderLen]byte
	hdrN int
}

// writeConn writes b (whole frames) as one session write, cut and padded
// as the padding scheme says for this write's number: each size is one
// TLS record; a check mark ends the write when b is used up; sizes past
// the data are filled with waste frames; data left after the sizes goes
// as it is. s.wmu must be held.
func (s *session) writeConn(b []byte) error {
	sizes := s.scheme.sizes(s.pkt)
	s.pkt++
	if sizes == nil {
		_, err := s.conn.Write(b)
		return err
	}
	for _, l := range sizes {
		switch {
		case l == checkMark:
			if len(b) == 0 {
				return nil
			}
			continue
		case len(b) > l:
			if _, err := s.conn.Write(b[:l]); err != nil {
				return err
			}
			b = b[l:]
		default:
			rec := make([]byte, 0, max(l, len(b)+frameHeaderLen))
			rec = append(rec, b...)
			if pad := l - len(b) - frameHeaderLen; pad >= 0 {
				rec = appendFrameHeader(rec, cmdWaste, 0, pad)
				rec = append(rec, make([]byte, pad)...)
			}
			b = nil
			if _, err := s.conn.Write(rec); err != nil {
				return err
			}
		}
	}
	if len(b) > 0 {
		_, err := s.conn.Write(b)
		return err
	}
	return nil
}

// writeFrames writes frames (b) as one write; the session's first also
// carries the settings frame before them.
func (s *session) writeFrames(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.settings {
		s.settings = true
		set := fmt.Sprintf("v=%d\nclient=skiff/1\npadding-md5=%s", protocolVersion, s.scheme.md5)
		pre := appendFrameHeader(make([]byte, 0, frameHeaderLen+len(set)+len(b)), cmdSettings, 0, len(set))
		b = append(append(pre, set...), b...)
	}
	if err := s.writeConn(b); err != nil {
		return s.writeFailed(err)
	}
	return nil
}

// writeFailed ends the session after a failed write and returns the error
// for the writer: a server that hung up before sending anything refused
// the password (the reset may reach the writer before the reader).
func (s *session) writeFailed(err error) error {
	if s.heard.Load() {
		err = fmt.Errorf("send: %w", err)
	} else {
		err = rejectedError(err)
	}
	s.fail(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err // the first reason, when the reader had one
}

// rejectedError says that the server ended the session, with err, before
// sending anything.
func rejectedError(err error) error {
	return fmt.Errorf("the server closed the session before sending anything: authentication %w (wrong password?) (%v)", errRejected, err)
}

// writeData sends p on stream id as PSH frames.
func (s *session) writeData(id uint32, p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// The frame is built in a pooled buffer, not one kept per session:
	// an idle session holds no write buffer.
	buf := getBuf(frameHeaderLen + min(len(p), maxFrameData-frameHeaderLen))
	defer putBuf(buf)
	written := 0
	for len(p) > 0 {
		n := min(len(p), len(buf)-frameHeaderLen)
		b := appendFrameHeader(buf[:0], cmdPSH, id, n)
		b = append(b, p[:n]...)
		if err := s.writeConn(b); err != nil {
			return written, s.writeFailed(err)
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// writeFrame sends b[frameHeaderLen:] on stream id as one PSH frame, its
// header built in b's first frameHeaderLen bytes (relay.FrameWriter): the
// payload is not copied.
func (s *session) writeFrame(id uint32, b []byte) (int, error) {
	n := len(b) - frameHeaderLen
	if n > maxFrameData {
		return s.writeData(id, b[frameHeaderLen:])
	}
	appendFrameHeader(b[:0], cmdPSH, id, n)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writeConn(b); err != nil {
		return 0, s.writeFailed(err)
	}
	return n, nil
}

// control sends a frame without data (FIN, heartbeat response).
func (s *session) control(cmd byte, id uint32) error {
	var b [frameHeaderLen]byte
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.settings {
		return nil // nothing went out yet: nothing to answer or close
	}
	return s.writeConn(appendFrameHeader(b[:0], cmd, id, 0))
}

// fail ends the session with err: the connection closes and its streams
// end with err.
func (s *session) fail(err error) {
	s.doneOnce.Do(func() {
		s.mu.Lock()
		s.err = err
		streams := s.streams
		s.streams = nil
		s.mu.Unlock()
		close(s.done)
		s.conn.Close()
		for _, st := range streams {
			st.end(err)
		}
		s.c.forget(s)
	})
}

func (s *session) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// readLoop reads the server's frames until the session ends.
func (s *session) readLoop() {
	err := s.read()
	switch {
	case errors.Is(err, net.ErrClosed): // closed here
	case !s.heard.Load():
		err = rejectedError(err)
	case errors.Is(err, io.EOF):
		// The server hung up: the streams on it were cut, not ended.
		err = fmt.Errorf("session ended by the server: %w", io.ErrUnexpectedEOF)
	}
	s.fail(err)
}

var errRejected = outbound.ErrAuthRejected

func (s *session) read() error {
	for {
		h, err := s.header()
		if err != nil {
			return err
		}
		s.heard.Store(true)
		switch h.cmd {
		case cmdPSH:
			st := s.stream(h.id)
			if st == nil {
				if err := discard(s.conn, h.n); err != nil {
					return err
				}
				continue
			}
			if err := s.deliver(st, h.n); err != nil {
				return err
			}
		case cmdFIN:
			if st := s.stream(h.id); st != nil {
				s.remove(h.id)
				st.end(io.EOF)
			}
			if err := discard(s.conn, h.n); err != nil {
				return err
			}
		case cmdSYNACK:
			msg, err := readData(s.conn, h.n)
			if err != nil {
				return err
			}
			if st := s.stream(h.id); st != nil && len(msg) > 0 {
				s.remove(h.id)
				st.end(fmt.Errorf("refused by server: %q: %w", truncate(msg), outbound.ErrTargetRefused))
			}
		case cmdAlert:
			msg, err := readData(s.conn, h.n)
			if err != nil {
				return err
			}
			return fmt.Errorf("server alert: %q", truncate(msg))
		case cmdUpdatePaddingScheme:
			msg, err := readData(s.conn, h.n)
			if err != nil {
				return err
			}
			if ps, err := parsePaddingScheme(string(msg)); err == nil {
				s.c.scheme.Store(ps) // for the sessions dialled from now on
			}
		case cmdHeartRequest:
			if err := discard(s.conn, h.n); err != nil {
				return err
			}
			s.c.goOwned(func() { s.control(cmdHeartResponse, h.id) }) // not in the read loop: a write may block
		case cmdServerSettings:
			msg, err := readData(s.conn, h.n)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(msg), "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "v="); ok && atLeast(v, 2) {
					s.v2.Store(true)
				}
			}
		default: // waste, heartbeat responses, settings, unknown
			if err := discard(s.conn, h.n); err != nil {
				return err
			}
		}
	}
}

// header reads the next frame header, completing one read ahead.
func (s *session) header() (frameHeader, error) {
	if _, err := io.ReadFull(s.conn, s.hdr[s.hdrN:]); err != nil {
		return frameHeader{}, err
	}
	s.hdrN = 0
	return parseFrameHeader(s.hdr[:]), nil
}

// tryReader reads what is there without waiting (tlsconf.Conn).
type tryReader interface {
	TryRead(p []byte) (int, error)
}

// deliver reads the n data bytes of a PSH frame of st into the buffers
// st's Reads hand over, and drops them once st has ended.
func (s *session) deliver(st *stream, n int) error {
	for n > 0 {
		var p []byte
		select {
		case p = <-st.want:
		default:
			// No Read is there: wake the stream's WaitRead, if it waits.
			select {
			case st.ready <- struct{}{}:
			default:
			}
			select {
			case p = <-st.want:
			case <-st.ended:
				return discard(s.conn, n)
			case <-s.done:
				return net.ErrClosed
			}
		}
		// The Read came, with or without waiting: no token may stay for
		// the next WaitRead (which cannot run before this Read returns).
		select {
		case <-st.ready:
		default:
		}
		used, left, err := s.fill(st.id, p, n)
		st.got <- readResult{n: used, failed: err != nil}
		if err != nil {
			return err
		}
		n = left
	}
	return nil
}

// fill reads up to n bytes of stream id's current frame into p and, while
// p has room and the next header is already there (TryRead) and starts
// another data frame of id, that frame's data too. It returns the bytes
// put in p and what is left of the frame being read. A header that is
// there but not for id, or is there in part, stays in s.hdr for the read
// loop.
func (s *session) fill(id uint32, p []byte, n int) (used, left int, err error) {
	tr, try := s.conn.(tryReader)
	for {
		m := min(n, len(p)-used)
		if _, err := io.ReadFull(s.conn, p[used:used+m]); err != nil {
			return used, 0, err
		}
		used += m
		n -= m
		if n > 0 || used == len(p) || !try {
			return used, n, nil
		}
		for s.hdrN < frameHeaderLen {
			k, err := tr.TryRead(s.hdr[s.hdrN:])
			s.hdrN += k
			if k == 0 || err != nil {
				return used, 0, nil // an error shows again on the next read
			}
		}
		h := parseFrameHeader(s.hdr[:])
		if h.cmd != cmdPSH || h.id != id {
			return used, 0, nil
		}
		s.hdrN = 0
		n = h.n
	}
}

// atLeast reports whether v is a number of at least n.
func atLeast(v string, n int) bool {
	i, err := strconv.Atoi(v)
	return err == nil && i >= n
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func discard(r io.Reader, n int) error {
	if n == 0 {
		return nil
	}
	_, err := io.CopyN(io.Discard, r, int64(n))
	return err
}

func readData(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func (s *session) stream(id uint32) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

// remove forgets stream id; a session left without streams goes back to
// the client's idle pool.
func (s *session) remove(id uint32) {
	s.mu.Lock()
	if _, ok := s.streams[id]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.streams, id)
	idle := len(s.streams) == 0 && s.err == nil
	if idle {
		s.idleSince = time.Now()
	}
	s.mu.Unlock()
	if idle {
		s.c.putIdle(s)
	}
}

// Buffers for received frames, in two size classes.
var (
	smallBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}
	largeBufs = sync.Pool{New: func() any { b := make([]byte, maxFrameData); return &b }}
)

func getBuf(n int) []byte {
	if n <= 16<<10 {
		return (*smallBufs.Get().(*[]byte))[:n]
	}
	return (*largeBufs.Get().(*[]byte))[:n]
}

func putBuf(b []byte) {
	switch cap(b) {
	case 16 << 10:
		b = b[:cap(b)]
		smallBufs.Put(&b)
	case maxFrameData:
		b = b[:cap(b)]
		largeBufs.Put(&b)
	}
}
