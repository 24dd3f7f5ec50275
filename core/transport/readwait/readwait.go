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
// systems), and not at all (false) otherwise.
func Wait(c net.Conn) bool {
	switch c := c.(type) {
	case Waiter:
		return c.WaitRead()
	case *net.TCPConn:
		return waitSocket(c)
	case *net.UnixConn:
		return waitSocket(c)
	}
	return false
}

// Can reports whether Wait may wait on c: c is a Waiter (which may still
// decline, for now) or a plain socket.
func Can(c net.Conn) bool {
	switch c.(type) {
	case Waiter, *net.TCPConn, *net.UnixConn:
		return canSocket || isWaiter(c)
	}
	return false
}

func isWaiter(c net.Conn) bool {
	_, ok := c.(Waiter)
	return ok
}
