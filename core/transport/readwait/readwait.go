// Package readwait lets a relay wait for a conn's next bytes without
// holding a read buffer. A stream direction with nothing in flight spends
// its life blocked in Read, and a blocked Read holds the buffer it reads
// into: 500 idle flows held a 4-60 KiB relay buffer per direction that
// way. A conn that can tell when a Read would find data (a socket, through
// the poller; a layer that knows what it has buffered, asking the layer
// below) implements Waiter, and the relay takes its buffer only once the
// wait is over.
//
// Waiting costs a bulk flow a system call per read (a peek) on top of the
// read itself. A conn that can also read what it holds without waiting
// implements TryReader: while a transfer keeps its bytes coming, the relay
// reads with TryRead, which never waits and so never holds a buffer while
// the flow is idle, and waits only once a TryRead finds nothing.
package readwait

import (
	"net"
	"syscall"
	"time"
)

// Waiter is a conn that can wait until its next Read has something to
// return — data, EOF or an error — without reading it.
type Waiter interface {
	// WaitRead blocks until a Read would find data, EOF or an error
	// without waiting for the network, or the conn's read deadline passes,
	// or it is closed. It reads nothing and may return early (a Read may
	// then still wait, holding its buffer), but it never waits while the
	// conn or a layer under it holds bytes a Read would return. It
	// reports false, at once, when the conn cannot wait this way now; the
	// caller then reads as usual. It must not run concurrently with Read.
	WaitRead() bool
}

// Notifier is a conn that can call back when its next Read has something
// to return, instead of keeping a goroutine blocked in WaitRead until then.
// A relay direction whose source is a Notifier holds no goroutine while it
// waits: through the TUN, every idle flow's upload direction (the app's
// side, a gVisor endpoint) held one, of 4-8 KiB of stack, for nothing.
// Only a source that can call back without a goroutine of its own can be
// one (the netstack's conns, through gVisor's waiter callbacks); a socket
// cannot, outside the Go runtime's poller.
type Notifier interface {
	// NotifyRead arranges for f to be called once, on another goroutine,
	// when a Read would find data, EOF or an error without waiting, or the
	// conn's read deadline passes or changes, or the conn is closed; f may
	// also be called early (the caller then asks again). It reports false,
	// and never calls f, when a Read would return at once now or the conn
	// cannot notify now: the caller then waits or reads as usual. f must
	// not block (it runs where the conn's events are raised); it typically
	// starts a goroutine. At most one notification is pending at a time:
	// NotifyRead must not be called again before f was called, nor
	// concurrently with Read.
	NotifyRead(f func()) bool
	// WaitReadFor is WaitRead for at most d: it reports false when d
	// passed first. A bulk flow's source runs dry for moments between
	// its bytes, and a goroutine that waits out such a moment costs less
	// than one started by a callback, whose stack grows again.
	WaitReadFor(d time.Duration) bool
}

// TryReader is a conn that can read what is there without waiting for
// the network.
type TryReader interface {
	// TryRead reads into p what a Read would return at once and never
	// waits. It returns (0, nil) when nothing is there at once; it may also
	// do so at EOF or on an error, which the next Read then reports. It
	// must not run concurrently with Read.
	TryRead(p []byte) (int, error)
}

// Wait waits as c's WaitRead would: through it when c is a Waiter, on the
// socket's readiness when c is a plain TCP or Unix socket (on Unix
// systems), and not at all (false) otherwise. Callers that wait on the
// same conn often keep Of(c) instead: on a socket, Wait allocates.
func Wait(c net.Conn) bool {
	if w := Of(c); w != nil {
		return w.WaitRead()
	}
	return false
}

// Of returns the Waiter that waits on c: c itself when it is one, one for
// the socket when c is a plain TCP or Unix socket (on Unix systems), and
// nil when nothing can wait on c. A socket's Waiter is also its TryReader
// (see For).
func Of(c net.Conn) Waiter {
	w, _ := For(c)
	return w
}

// TryOf returns the TryReader of c: c itself when it is one, one for the
// socket when c is a plain TCP or Unix socket (on Unix systems), and nil
// otherwise.
func TryOf(c net.Conn) TryReader {
	_, t := For(c)
	return t
}

// Wrapper is a conn that wraps another and can do only what that one
// can: ReadWaiters returns its Waiter and TryReader, each nil when the
// wrapped conn lacks it. For asks it instead of looking at its methods,
// so that a caller never tries a read or a wait that cannot happen (the
// relay would hand its buffer back and take it again for nothing, on
// every read of a bulk flow).
type Wrapper interface {
	ReadWaiters() (Waiter, TryReader)
}

// For returns c's Waiter and TryReader, as Of and TryOf do, making one
// socket reader for both when c is a socket. Either may be nil.
func For(c net.Conn) (Waiter, TryReader) {
	if wr, ok := c.(Wrapper); ok {
		return wr.ReadWaiters()
	}
	w, wok := c.(Waiter)
	t, tok := c.(TryReader)
	if wok || tok {
		return w, t
	}
	switch c := c.(type) {
	case *net.TCPConn:
		return OfSocket(c)
	case *net.UnixConn:
		return OfSocket(c)
	}
	return nil, nil
}

// Lazy holds For(c), made on the first Of and kept: a layer over c that
// may never be waited on does not make a socket's reader up front. Like
// the Waiter and TryReader it holds, it belongs to c's reader.
type Lazy struct {
	w    Waiter
	t    TryReader
	done bool
}

// Of returns For(c), made on the first call; c is the same conn each time.
func (l *Lazy) Of(c net.Conn) (Waiter, TryReader) {
	if !l.done {
		l.w, l.t = For(c)
		l.done = true
	}
	return l.w, l.t
}

// OfSocket returns the Waiter and TryReader of a socket, one reader for
// both: nil, nil off Unix systems or when sc has no descriptor.
func OfSocket(sc syscall.Conn) (Waiter, TryReader) {
	if s := socketOf(sc); s != nil {
		return s, s
	}
	return nil, nil
}
