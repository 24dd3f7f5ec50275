package anytls

import (
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// stream is one proxied TCP flow on a session: a net.Conn.
//
// A stream has no receive queue: Read hands its buffer to the session's
// reader, which decrypts the stream's frames straight into it (and, when
// the next frames of the stream are already there, into the rest of it),
// so that every received byte is copied once, from TLS's record to the
// caller, and a stream holds no buffer of its own. AnyTLS has no flow
// control: a stream that is not read stalls its session, as TCP would; a
// session carries one stream at a time (see Client), so that stalls no
// other. WaitRead waits until the session's reader has data for the
// stream (readwait.Waiter), so that a relay's idle direction holds no
// buffer either.
type stream struct {
	s  *session
	id uint32

	want    chan []byte     // Read's buffer, taken by the session's reader
	got     chan readResult // what it put there; one per buffer taken
	ready   chan struct{}   // the reader has data for a Read; one token, for WaitRead
	ended   chan struct{}   // closed by end
	endOnce sync.Once
	endErr  error // io.EOF for the server's FIN
	rdline  quicconn.Deadline
	closeMu sync.Mutex
	closed  bool
}

// readResult is what the session's reader put in a Read's buffer; failed
// says the session ended meanwhile (the stream's end error says why).
type readResult struct {
	n      int
	failed bool
}

func newStream(s *session, id uint32) *stream {
	return &stream{s: s, id: id, want: make(chan []byte), got: make(chan readResult, 1), ready: make(chan struct{}, 1), ended: make(chan struct{}), rdline: quicconn.MakeDeadline()}
}

// end ends the stream's receiving side with err (io.EOF: the server
// closed it).
func (st *stream) end(err error) {
	st.endOnce.Do(func() {
		st.endErr = err
		close(st.ended)
	})
}

// Read reads stream data: it waits until the session's reader has put the
// data of one or more frames in p. The read deadline holds until data
// starts to arrive; the rest of a frame whose first bytes came is waited
// for.
func (st *stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	select {
	case st.want <- p:
	case <-st.ended:
		return 0, st.endErr
	case <-st.rdline.Wait():
		return 0, os.ErrDeadlineExceeded
	}
	r := <-st.got
	if r.n == 0 && r.failed {
		<-st.ended
		return 0, st.endErr
	}
	return r.n, nil
}

// WaitRead waits until the session's reader has data for the next Read,
// the stream has ended or the read deadline passes (readwait.Waiter). It
// reads nothing.
func (st *stream) WaitRead() bool {
	select {
	case <-st.ready:
	case <-st.ended:
	case <-st.rdline.Wait():
	}
	return true
}

// Write sends p on the stream.
func (st *stream) Write(p []byte) (int, error) {
	if err := st.writeErr(); err != nil {
		return 0, err
	}
	return st.s.writeData(st.id, p)
}

// writeErr is why the stream cannot send: it ended.
func (st *stream) writeErr() error {
	select {
	case <-st.ended:
		if st.endErr == io.EOF {
			return io.ErrClosedPipe
		}
		return st.endErr
	default:
		return nil
	}
}

// FrontHeadroom is the room WriteFrame needs before the payload: a frame
// header.
func (st *stream) FrontHeadroom() int { return frameHeaderLen }

// WriteFrame sends b[FrontHeadroom():] on the stream as Write does,
// building the frame header in front of it.
func (st *stream) WriteFrame(b []byte) (int, error) {
	if err := st.writeErr(); err != nil {
		return 0, err
	}
	return st.s.writeFrame(st.id, b)
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
