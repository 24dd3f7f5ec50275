// Package relay moves bytes between the app's side of a flow and its
// upstream: both directions of a stream with half-close, and UDP sessions
// with an idle time-out. Counters sit here, on the one place every byte
// passes, so that the stats never disagree with what was relayed.
//
// The hot paths take their buffers from a pool and do not allocate per read.
package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// datagramBufferSize is the UDP datagram buffer: it holds any datagram of
// common size. A UDP session keeps one per direction for its whole life, so
// it stays smaller than a bulk stream's.
const datagramBufferSize = 32 << 10

// Counter receives the number of bytes relayed, once per successful read.
// Implementations must be safe for concurrent use and cheap (an atomic add).
type Counter interface {
	Add(n int64)
}

// nopCounter counts nothing.
type nopCounter struct{}

func (nopCounter) Add(int64) {}

var datagramPool = sync.Pool{New: func() any { b := make([]byte, datagramBufferSize); return &b }}

// FrameWriter is a conn that frames what it writes (a WebSocket frame
// around a proxy's stream, say) and can build the frame around the payload
// in the caller's buffer instead of copying the payload into its own. Stream
// reads into its buffer after FrontHeadroom bytes and hands the whole buffer
// to WriteFrame: on upload over WebSocket this saves one copy of every byte.
type FrameWriter interface {
	// FrontHeadroom is how many bytes WriteFrame needs in front of the
	// payload (at most maxHeadroom); it does not change over the conn's life.
	FrontHeadroom() int
	// WriteFrame writes b[FrontHeadroom():] as Write would and returns how
	// many of those payload bytes it wrote. It may modify all of b (build a
	// header in front, mask the payload in place); the caller does not use
	// b's contents again.
	WriteFrame(b []byte) (int, error)
}

// TailRoomer is a FrameWriter that also needs room after the payload (an
// AEAD tag sealed in place, say). Stream leaves TailRoom bytes free after
// what it reads and hands them to WriteFrame with the rest: WriteFrame then
// writes b[FrontHeadroom():len(b)-TailRoom()] as Write would and may use
// all of b. On Shadowsocks 2022 upload this saves copying every chunk's
// payload into a buffer of the protocol's own.
type TailRoomer interface {
	FrameWriter
	// TailRoom is how many bytes WriteFrame needs after the payload (at
	// most maxHeadroom); it does not change over the conn's life.
	TailRoom() int
}

// Lender is a src that opens what it reads in a buffer of its own and can
// lend the relay those bytes instead of copying them into the relay's
// buffer (a Shadowsocks 2022 stream: its server's chunks are up to 64 KiB,
// more than the relay's BufferSize, and a chunk opened in the stream's
// buffer was copied out of it whole: 8 % of a download's CPU). A flowing
// direction asks it before each read and writes what it lends to dst as
// it is.
type Lender interface {
	// Lend returns the bytes the next Read would return first, held in the
	// conn's own buffer, when there are more than min of them and they are
	// there without waiting; nil otherwise. It never waits and returns no
	// error (an error shows on the next Read). The bytes are the caller's
	// to write until its next call on the conn, and are consumed: the next
	// Read returns what follows them. It must not run concurrently with
	// Read.
	Lend(min int) []byte
}

// maxHeadroom bounds a FrameWriter's headroom and tail room: they come out
// of the buffer.
const maxHeadroom = 64

// closeWriter is a conn that can shut down its sending half (TCP, TLS,
// most protocol streams).
type closeWriter interface {
	CloseWrite() error
}

// SoftCloser is a conn whose CloseWrite ends its sending half with a
// marker inside its protocol (VMess's empty chunk), not with the
// transport's FIN, and whose server may not pass that marker on:
// sing-box's VMess server keeps the destination's side open, so a flow
// whose app has gone would wait for the destination forever (one
// goroutine and its buffers per closed connection). After such a
// CloseWrite the other direction reads under the HalfCloseIdle limit, as
// for a conn without CloseWrite.
type SoftCloser interface {
	SoftCloseWrite() bool
}

// HalfCloseIdle is how long the remaining direction of a stream may stay
// idle after the other direction ended on a conn that cannot pass the
// half-close on (no CloseWrite: WebSocket, some protocol streams). The reply
// to a request still gets through as long as it keeps coming; a peer that
// waits for an EOF it will never see does not hold the flow, its buffers
// and its server-side stream open for long. Xray's defaults for the same
// wait are 1 to 5 s (uplinkOnly, downlinkOnly); at 10 s, 500 closed
// VLESS+WS connections still held 35 MiB when the TUN benchmark read the
// idle memory.
const HalfCloseIdle = 2 * time.Second

// Stream relays between app (the flow's side toward the application) and up
// (its upstream) until both directions have ended or ctx ends. Bytes from
// app to up are added to upCount, the others to downCount; either may be nil.
// Both directions take their read buffers from bufs, which the streams of
// one engine share (see Buffers); it must not be nil.
//
// When one side ends its sending half (EOF), Stream shuts down the sending
// half of the other side (CloseWrite) and keeps relaying the other
// direction. When the other side has no CloseWrite, the other direction
// goes on while it is not idle for HalfCloseIdle. Stream closes both conns
// before it returns. The error is the first one that was not an orderly end
// (EOF, or a conn closed because the other direction ended).
func Stream(ctx context.Context, bufs *Buffers, app, up net.Conn, upCount, downCount Counter) error {
	if upCount == nil {
		upCount = nopCounter{}
	}
	if downCount == nil {
		downCount = nopCounter{}
	}
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			app.Close()
			up.Close()
		})
	}
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	defer closeBoth() // also when a panic unwinds through here, so the other direction ends

	var lingerUp, lingerDown atomic.Bool // set: that direction reads under an idle deadline
	errc := make(chan error, 1)
	upload := newHalf(bufs, up, app, upCount, &lingerUp, &lingerDown)
	upload.ctx = ctx
	upload.end = func(err error) { errc <- err }
	if n, ok := app.(readwait.Notifier); ok && upload.wait != nil {
		upload.notifier = n
		upload.resume = func() { go upload.run() }
	}
	go upload.run()
	errDown := copyHalf(bufs, app, up, downCount, &lingerDown, &lingerUp)
	errUp := <-errc
	closeBoth()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errUp != nil {
		return errUp
	}
	return errDown
}

// flowingWait is how long a direction whose last read said more is
// coming (flowing) waits on its goroutine for its source before it hands
// the wait to a notifier and ends the goroutine: a callback per dry
// moment of a bulk upload through the TUN would start a goroutine each
// time, whose stack grows again on its first writes. An idle flow gives
// its goroutine up a second after its last bulk read, at once after a
// small one.
const flowingWait = time.Second

// half is one direction of a stream: it copies src to dst until EOF or an
// error, counting each read, and then ends dst's sending half so that the
// peer sees EOF too. When linger is set (by the other direction), each
// read waits at most HalfCloseIdle. When dst cannot end its sending half,
// it sets peerLinger for the other direction, which reads from dst.
//
// A direction that runs on a goroutine of its own (run) and whose source
// can call back when its next bytes come (readwait.Notifier: the app's
// side of a TUN flow) ends that goroutine while it waits and goes on on a
// new one, started by the callback: an idle flow's direction holds no
// goroutine and no stack. Stream still owns it: it waits for the
// direction's end, and closing the conns (or ctx) wakes a waiting source.
type half struct {
	b                  buffer
	dst, src           net.Conn
	c                  Counter
	linger, peerLinger *atomic.Bool

	fw   FrameWriter // dst, when it can frame in the relay's buffer (head)
	head bool
	h, t int // the headroom and tail room the buffer keeps for fw

	wait    readwait.Waiter
	try     readwait.TryReader
	lend    Lender // src, when it lends what it holds (see copy)
	flowing bool   // the last read said more is coming (see copy)

	// For a direction run on its own goroutine (run): ctx for guard.Catch,
	// end takes the direction's result.
	ctx context.Context
	end func(error)
	// notifier is src, when the direction waits for it without a
	// goroutine; resume runs the direction again, on a new goroutine,
	// and resumed says it was run that way.
	notifier readwait.Notifier
	resume   func()
	resumed  bool
}

// copyHalf runs the direction from src to dst on the calling goroutine,
// waiting on it when it waits (see half), and returns its error.
func copyHalf(bufs *Buffers, dst, src net.Conn, c Counter, linger, peerLinger *atomic.Bool) error {
	d := newHalf(bufs, dst, src, c, linger, peerLinger)
	defer d.b.release()
	_, err := d.copy()
	return err
}

func newHalf(bufs *Buffers, dst, src net.Conn, c Counter, linger, peerLinger *atomic.Bool) *half {
	d := &half{b: buffer{bs: bufs}, dst: dst, src: src, c: c, linger: linger, peerLinger: peerLinger}
	d.fw, d.head = dst.(FrameWriter)
	if d.head {
		if tr, ok := dst.(TailRoomer); ok {
			d.t = tr.TailRoom()
		}
		if d.h = d.fw.FrontHeadroom(); d.h < 0 || d.h > maxHeadroom || d.t < 0 || d.t > maxHeadroom {
			d.head, d.h, d.t = false, 0, 0
		}
	}
	d.wait, d.try = readwait.For(src)
	if d.wait == nil {
		d.try = nil // its reads block with their buffer anyway
	}
	d.lend, _ = src.(Lender)
	return d
}

// run runs the direction on the calling goroutine, as a goroutine of its
// own: until it ends, when it hands its result to end, or until it waits
// for its source through the notifier, whose callback runs it again.
func (d *half) run() {
	var err error
	waiting, panicked := false, true
	func() {
		defer guard.Catch(d.ctx, &err, "tcp relay")
		waiting, err = d.copy()
		panicked = false
	}()
	if waiting {
		return // d belongs to the callback now
	}
	if panicked { // end the flow: the other direction may wait for long
		d.dst.Close()
		d.src.Close()
	}
	d.b.release()
	d.end(err)
}

// copy copies until the direction ends and returns its error, or, with a
// notifier, until the direction waits for its source through it: it
// reports waiting, and must not touch d again, as the callback may already
// run it on another goroutine.
func (d *half) copy() (waiting bool, err error) {
	// Any read may be the last for a long time. When src can say when its
	// next bytes are there (readwait), the direction waits for them
	// holding no buffer, and on a shallow stack (or on no goroutine at
	// all: notifier), and then takes one of the size it had: an idle flow
	// holds no relay buffer, whatever its last read was. While a transfer
	// keeps its bytes coming (the last read brought MediumBufferSize or
	// more, or filled its buffer), a src that can read without waiting
	// (TryRead) is read straight into the buffer instead, and the
	// direction waits only once that finds nothing: on a bulk flow from a
	// socket the wait was a system call (a peek) per read. Before either, a
	// src that lends (Lender) is asked for what it holds beyond the
	// buffer's size.
	resumed := d.resumed
	d.resumed = false
	for {
		var (
			bp   *[]byte
			buf  []byte
			n    int
			rerr error
		)
		if !resumed { // else it was waiting: the deadline stays, and nothing was there
			if d.linger.Load() {
				d.src.SetReadDeadline(time.Now().Add(HalfCloseIdle))
			}
			if d.flowing && d.lend != nil {
				if lent, werr := d.writeLent(); lent {
					if err = werr; err != nil {
						break
					}
					continue
				}
			}
			if d.flowing && d.try != nil {
				bp = d.b.get()
				buf = (*bp)[d.h : len(*bp)-d.t]
				n, rerr = d.try.TryRead(buf)
			}
		}
		resumed = false
		if n == 0 && rerr == nil {
			if d.wait != nil {
				d.b.park()
				waited := false
				if d.notifier != nil {
					// A bulk flow waits out its source's dry moments
					// on its goroutine (see flowingWait).
					if waited = d.flowing && d.notifier.WaitReadFor(flowingWait); !waited {
						d.resumed = true
						if d.notifier.NotifyRead(d.resume) {
							return true, nil
						}
						d.resumed = false
					}
				}
				if !waited {
					d.wait.WaitRead()
				}
			}
			if d.lend != nil {
				if lent, werr := d.writeLent(); lent {
					if err = werr; err != nil {
						break
					}
					d.flowing = true
					continue
				}
			}
			bp = d.b.get()
			buf = (*bp)[d.h : len(*bp)-d.t]
			n, rerr = d.src.Read(buf)
		}
		d.flowing = n >= MediumBufferSize || n == len(buf)
		if n > 0 {
			d.c.Add(int64(n))
			var werr error
			if d.head {
				_, werr = d.fw.WriteFrame((*bp)[:d.h+n+d.t])
			} else {
				_, werr = d.dst.Write(buf[:n])
			}
			if werr != nil {
				err = werr
				break
			}
		}
		d.b.resize(n, len(buf))
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	return false, d.finish(err)
}

// writeLent writes to dst what src lends beyond the buffer's size, if it
// lends anything (lent): the bytes go from src's buffer, and the
// direction's own waits in the pool meanwhile.
func (d *half) writeLent() (lent bool, err error) {
	b := d.lend.Lend(BufferSize - d.h - d.t)
	if len(b) == 0 {
		return false, nil
	}
	d.b.park()
	d.c.Add(int64(len(b)))
	_, err = d.dst.Write(b)
	return true, err
}

// finish ends the direction after its copy ended with err (nil: EOF):
// passes the EOF on, or ends both directions.
func (d *half) finish(err error) error {
	dst, src := d.dst, d.src
	if err == nil {
		cw, ok := dst.(closeWriter)
		var cerr error
		if ok {
			// A conn whose CloseWrite depends on what it wraps says
			// errors.ErrUnsupported when that cannot: as no CloseWrite.
			if cerr = cw.CloseWrite(); errors.Is(cerr, errors.ErrUnsupported) {
				ok = false
			}
		}
		if ok {
			if cerr == nil {
				if sc, ok := dst.(SoftCloser); ok && sc.SoftCloseWrite() {
					d.peerLinger.Store(true)
					dst.SetReadDeadline(time.Now().Add(HalfCloseIdle))
				}
				return nil
			}
		} else {
			// The EOF cannot be passed on: let the other direction finish
			// what it is sending, under an idle limit.
			d.peerLinger.Store(true)
			dst.SetReadDeadline(time.Now().Add(HalfCloseIdle))
			return nil
		}
	}
	// The copy failed (or CloseWrite did): end both directions.
	dst.Close()
	src.Close()
	if isClosed(err) {
		return nil
	}
	return err
}

// isClosed reports whether err only says that a conn was closed under a
// blocked call, which is how the second direction ends after the first.
func isClosed(err error) bool {
	return err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrDeadlineExceeded)
}
