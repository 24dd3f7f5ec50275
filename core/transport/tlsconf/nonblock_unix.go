//go:build unix

package tlsconf

import (
	"net"
	"syscall"

	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// nonblockReader reads from a socket without waiting: one read(2) on the
// non-blocking descriptor, through syscall.RawConn so that Go's poller
// keeps its state.
type nonblockReader struct {
	rc   syscall.RawConn       // nil: the conn is not a socket
	tr   readwait.TryReader    // the socket's
	peek func(fd uintptr) bool // peekFD
	look func(fd uintptr) bool // lookFD
	rdy  bool
}

func (r *nonblockReader) init(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	if _, r.tr = readwait.OfSocket(sc); r.tr == nil {
		return
	}
	r.rc = rc
	r.peek = r.peekFD
	r.look = r.lookFD
}

// canWait reports whether wait and ready work on this conn.
func (r *nonblockReader) canWait() bool { return r.rc != nil }

// ready reports whether a read would not wait: the kernel holds data, the
// peer has closed, or the socket has an error. It does not wait itself.
func (r *nonblockReader) ready() bool {
	r.rdy = false
	if r.rc.Read(r.look) != nil {
		return true // closed or past its deadline: a read reports it at once
	}
	return r.rdy
}

// lookFD peeks once and never waits.
func (r *nonblockReader) lookFD(fd uintptr) bool {
	r.rdy = peekReady(fd)
	return true
}

// wait blocks until a read would not wait, without reading: the zero-byte
// read that lets the caller hold no buffer while the socket is quiet. It
// returns early when the socket's read deadline passes or it is closed.
func (r *nonblockReader) wait() {
	r.rc.Read(r.peek)
}

func (r *nonblockReader) peekFD(fd uintptr) bool { return peekReady(fd) }

// peekReady peeks at one byte of fd: false only when it would block.
func peekReady(fd uintptr) bool { return readwait.Ready(fd) }

// read reads into p what the kernel holds now. It returns 0 when it holds
// nothing (EAGAIN), and also at EOF or on an error: a read that waits
// reports those.
func (r *nonblockReader) read(p []byte) int {
	if r.rc == nil {
		return 0
	}
	n, _ := r.tr.TryRead(p)
	return n
}
