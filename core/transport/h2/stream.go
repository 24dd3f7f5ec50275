package h2

import (
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// stream is one request as a byte stream. It has no goroutine: the
// connection's reader queues DATA into buf and wakes Read through rwake;
// Write sends DATA frames itself, waiting on wwake for send window.
type stream struct {
	hc *hconn
	id uint32

	rwake, wwake chan struct{} // capacity 1: "look again"

	sendWin int64 // under hc.mu

	mu        sync.Mutex
	buf       rxBuf
	recvAvail int64 // receive window the server has left
	gotResp   bool  // the 200 came
	eof       bool  // END_STREAM received
	sentEnd   bool  // END_STREAM sent
	closed    bool
	err       error
	endErr    error // what Read returns at END_STREAM instead of io.EOF (Config.Check)
	rdl, wdl  time.Time
	rt, wt    *time.Timer
}

func newStream(hc *hconn) *stream {
	return &stream{hc: hc, rwake: make(chan struct{}, 1), wwake: make(chan struct{}, 1), recvAvail: minStreamWindow}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// onHeaders takes the response headers (or trailers).
func (s *stream) onHeaders(f *http2.MetaHeadersFrame) {
	s.mu.Lock()
	first := !s.gotResp && s.err == nil
	if first {
		switch st := statusOf(f); {
		case st >= 100 && st < 200 && !f.StreamEnded():
			first = false
		case st == 200:
			s.gotResp = true
		default:
			s.err = &StatusError{Target: s.hc.cl.target, Status: st}
			first = false
		}
	}
	if check := s.hc.cl.cfg.Check; check != nil && (first || s.gotResp && s.err == nil && s.endErr == nil) {
		if err := check(f.Fields, f.StreamEnded()); err != nil {
			if first {
				s.err = err // Dial's
			} else {
				s.endErr = err
			}
		}
	}
	if f.StreamEnded() {
		s.eof = true
	}
	s.mu.Unlock()
	wake(s.rwake)
}

// onData queues a DATA frame's payload, n bytes of window; false: the
// server overflowed the stream's window.
func (s *stream) onData(p []byte, n int64, end bool) bool {
	s.mu.Lock()
	if s.closed || s.err != nil {
		s.mu.Unlock()
		s.hc.consumed(int64(len(p)))
		return true
	}
	if n > s.recvAvail {
		s.mu.Unlock()
		return false
	}
	s.recvAvail -= n
	s.buf.write(p)
	if end {
		s.eof = true
	}
	s.mu.Unlock()
	wake(s.rwake)
	return true
}

// addSendWindow grows (or shrinks) the send window; hc.mu is held. True:
// it overflowed.
func (s *stream) addSendWindow(d int64) bool {
	s.sendWin += d
	wake(s.wwake)
	return s.sendWin > math.MaxInt32
}

// fail ends the stream with err; bytes it holds are dropped unless the
// server had ended its side cleanly and keepEnded.
func (s *stream) fail(err error, keepEnded bool) {
	s.mu.Lock()
	if s.err == nil && !(s.eof && keepEnded) {
		s.err = err
		s.buf.free()
	}
	s.mu.Unlock()
	wake(s.rwake)
	wake(s.wwake)
}

// updateWindow gives the server back the window the reader freed, up to
// the stream's share of the client's budget.
func (s *stream) updateWindow() {
	target := int64(s.hc.cl.streamWindow())
	s.mu.Lock()
	if s.closed || s.eof || s.err != nil {
		s.mu.Unlock()
		return
	}
	want := target - s.recvAvail - int64(s.buf.n)
	if want < target/4 || want <= 0 {
		s.mu.Unlock()
		return
	}
	s.recvAvail += want
	s.mu.Unlock()
	_ = s.hc.write(func() error { return s.hc.fr.WriteWindowUpdate(s.id, uint32(want)) })
}

// readable reports whether Read would return without waiting; s.mu held.
func (s *stream) readable() bool {
	return s.buf.n > 0 || s.eof || s.err != nil || s.closed || (!s.rdl.IsZero() && !time.Now().Before(s.rdl))
}

func (s *stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		s.mu.Lock()
		switch {
		case s.buf.n > 0:
			n := s.buf.read(p)
			s.mu.Unlock()
			s.hc.consumed(int64(n))
			s.updateWindow()
			return n, nil
		case s.closed:
			s.mu.Unlock()
			return 0, net.ErrClosed
		case s.err != nil: // before eof: a refusal may end the stream
			err := s.err
			s.mu.Unlock()
			return 0, err
		case s.eof:
			err := s.endErr
			s.mu.Unlock()
			if err != nil {
				return 0, err
			}
			return 0, io.EOF
		case !s.rdl.IsZero() && !time.Now().Before(s.rdl):
			s.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
		s.mu.Unlock()
		<-s.rwake
	}
}

// WaitRead waits until Read has something to return (readwait.Waiter):
// the stream holds no caller's buffer while it waits.
func (s *stream) WaitRead() bool {
	for {
		s.mu.Lock()
		ok := s.readable()
		s.mu.Unlock()
		if ok {
			// Leave the wake-up for Read if one came meanwhile.
			return true
		}
		<-s.rwake
	}
}

func (s *stream) Write(p []byte) (int, error) {
	hc := s.hc
	total := 0
	for len(p) > 0 {
		s.mu.Lock()
		var err error
		switch {
		case s.closed:
			err = net.ErrClosed
		case s.err != nil:
			err = s.err
		case s.sentEnd:
			err = errors.New("h2: write after CloseWrite")
		case !s.wdl.IsZero() && !time.Now().Before(s.wdl):
			err = os.ErrDeadlineExceeded
		}
		s.mu.Unlock()
		if err != nil {
			return total, err
		}
		hc.mu.Lock()
		if hc.err != nil {
			err := hc.err
			hc.mu.Unlock()
			return total, err
		}
		n := min(int64(len(p)), s.sendWin, hc.sendWin, int64(hc.peerFrame), maxSendFrame)
		if n > 0 {
			s.sendWin -= n
			hc.sendWin -= n
		}
		hc.mu.Unlock()
		if n <= 0 {
			<-s.wwake
			continue
		}
		chunk := p[:n]
		if err := hc.write(func() error { return hc.fr.WriteData(s.id, false, chunk) }); err != nil {
			hc.close(err)
			return total, err
		}
		total += int(n)
		p = p[n:]
	}
	return total, nil
}

// CloseWrite ends the request body (END_STREAM): the server sees EOF and
// goes on answering.
func (s *stream) CloseWrite() error {
	s.mu.Lock()
	if s.sentEnd || s.closed || s.err != nil {
		s.mu.Unlock()
		return nil
	}
	s.sentEnd = true
	s.mu.Unlock()
	return s.hc.write(func() error { return s.hc.fr.WriteData(s.id, true, nil) })
}

// Close ends the stream: RST_STREAM unless both sides had ended, and
// its buffered bytes go back to the pool.
func (s *stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	done := s.sentEnd && s.eof
	s.buf.free()
	for _, t := range []*time.Timer{s.rt, s.wt} {
		if t != nil {
			t.Stop()
		}
	}
	s.mu.Unlock()
	hc := s.hc
	if hc.stream(s.id) == s {
		if !done {
			_ = hc.write(func() error { return hc.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) })
		}
		hc.remove(s)
	}
	wake(s.rwake)
	wake(s.wwake)
	return nil
}

// LocalAddr and RemoteAddr are unknown: streams share a connection.
func (s *stream) LocalAddr() net.Addr  { return h2Addr{} }
func (s *stream) RemoteAddr() net.Addr { return h2Addr{} }

type h2Addr struct{}

func (h2Addr) Network() string { return "h2" }
func (h2Addr) String() string  { return "h2" }

// SetDeadline sets both deadlines.
func (s *stream) SetDeadline(t time.Time) error {
	s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

// SetReadDeadline makes Read and WaitRead return at t (Read with
// os.ErrDeadlineExceeded); the stream stays usable with a later one.
func (s *stream) SetReadDeadline(t time.Time) error { return s.setDeadline(&s.rdl, &s.rt, t, s.rwake) }

// SetWriteDeadline is like SetReadDeadline for a Write waiting for window.
func (s *stream) SetWriteDeadline(t time.Time) error { return s.setDeadline(&s.wdl, &s.wt, t, s.wwake) }

func (s *stream) setDeadline(dl *time.Time, timer **time.Timer, t time.Time, ch chan struct{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*dl = t
	if *timer != nil {
		(*timer).Stop()
		*timer = nil
	}
	if t.IsZero() {
		return nil
	}
	if d := time.Until(t); d > 0 {
		*timer = time.AfterFunc(d, func() { wake(ch) })
	} else {
		wake(ch)
	}
	return nil
}
