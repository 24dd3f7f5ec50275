package anytls

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// streamQueue is how many received frames a stream holds before the
// session's reader waits for it (AnyTLS has no flow control: a stream that
// is not read stalls its session, as TCP would).
const streamQueue = 4

// stream is one proxied TCP flow on a session: a net.Conn.
type stream struct {
	s  *session
	id uint32

	recv     chan []byte
	ended    chan struct{} // closed by end
	endOnce  sync.Once
	endErr   error  // io.EOF for the server's FIN
	cur      []byte // the frame being read
	curBuf   []byte // its pooled buffer
	rdline   quicconn.Deadline
	closeMu  sync.Mutex
	closed   bool
	noAnswer bool // nothing read yet
}

func newStream(s *session, id uint32) *stream {
	return &stream{s: s, id: id, recv: make(chan []byte, streamQueue), ended: make(chan struct{}), rdline: quicconn.MakeDeadline(), noAnswer: true}
}

// push queues a received frame; it waits while the queue is full, and
// drops the frame once the stream ended.
func (st *stream) push(b []byte) {
	select {
	case st.recv <- b:
	case <-st.ended:
		putBuf(b)
	case <-st.s.done:
		putBuf(b)
	}
}

// end ends the stream's receiving side with err (io.EOF: the server
// closed it).
func (st *stream) end(err error) {
	st.endOnce.Do(func() {
		st.endErr = err
		close(st.ended)
	})
}

// Read reads stream data. It fills p from as many received frames as are
// queued, so that a relay reading into a large buffer gets it filled while
// data is backlogged (and keeps its large buffer) rather than one frame a
// call.
func (st *stream) Read(p []byte) (int, error) {
	if len(st.cur) == 0 {
		if err := st.next(true); err != nil {
			return 0, err
		}
	}
	n := 0
	for {
		m := copy(p[n:], st.cur)
		st.cur = st.cur[m:]
		n += m
		if n == len(p) || st.next(false) != nil {
			break
		}
	}
	st.noAnswer = false
	return n, nil
}

var errNoFrame = errors.New("no frame queued")

// next makes the next received frame current, waiting for one when wait
// is set; without wait it fails with errNoFrame when none is queued. The
// current frame must be used up.
func (st *stream) next(wait bool) error {
	if st.curBuf != nil {
		putBuf(st.curBuf)
		st.cur, st.curBuf = nil, nil
	}
	select {
	case b := <-st.recv:
		st.cur, st.curBuf = b, b
		return nil
	default:
	}
	if !wait {
		return errNoFrame
	}
	select {
	case b := <-st.recv:
		st.cur, st.curBuf = b, b
		return nil
	case <-st.ended:
		// Data queued before the end is still read.
		select {
		case b := <-st.recv:
			st.cur, st.curBuf = b, b
			return nil
		default:
			return st.endErr
		}
	case <-st.rdline.Wait():
		return os.ErrDeadlineExceeded
	}
}

// Write sends p on the stream.
func (st *stream) Write(p []byte) (int, error) {
	select {
	case <-st.ended:
		if st.endErr == io.EOF {
			return 0, io.ErrClosedPipe
		}
		return 0, st.endErr
	default:
	}
	return st.s.writeData(st.id, p)
}

// Close sends FIN and forgets the stream; its session goes back to the
// idle pool.
func (st *stream) Close() error {
	st.closeMu.Lock()
	defer st.closeMu.Unlock()
	if st.closed {
		return nil
	}
	st.closed = true
	st.end(net.ErrClosed)
	if st.s.alive() {
		st.s.control(cmdFIN, st.id)
	}
	st.s.remove(st.id)
	for {
		select {
		case b := <-st.recv:
			putBuf(b)
			continue
		default:
		}
		break
	}
	return nil
}

// LocalAddr returns the session's local address.
func (st *stream) LocalAddr() net.Addr { return st.s.conn.LocalAddr() }

// RemoteAddr returns the server's address.
func (st *stream) RemoteAddr() net.Addr { return st.s.conn.RemoteAddr() }

// SetDeadline sets the read deadline (see SetWriteDeadline).
func (st *stream) SetDeadline(t time.Time) error { return st.SetReadDeadline(t) }

// SetReadDeadline makes Read fail with os.ErrDeadlineExceeded after t.
func (st *stream) SetReadDeadline(t time.Time) error {
	st.rdline.Set(t)
	return nil
}

// SetWriteDeadline does nothing: the streams of a session share its TLS
// connection, and a write waits as long as that takes (the session ends
// when the connection fails).
func (st *stream) SetWriteDeadline(time.Time) error { return nil }
