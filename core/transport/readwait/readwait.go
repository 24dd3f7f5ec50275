// Package readwait lets a relay wait for a conn's next bytes without
// holding a read buffer. A stream direction with nothing in flight spends
// its life blocked in Read, and a blocked Read holds the buffer it reads
// into: 500 idle flows held a 4-60 KiB relay buffer per direction that
// way. A conn that can tell when a Read would find data (a socket, through
// the poller; a layer that knows what it has buffered, asking the layer
// below) implements Waiter, and the relay takes its buffer only once the
// wait is over.
package readwait

import "net"

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
// nil when nothing can wait on c.
func Of(c net.Conn) Waiter {
	switch c := c.(type) {
	case Waiter:
		return c
	case *net.TCPConn:
		return socketWaiter(c)
	case *net.UnixConn:
		return socketWaiter(c)
	}
	return nil
}
