//go:build unix

package tlsconf

import (
	"net"
	"syscall"
)

// nonblockReader reads from a socket without waiting: one read(2) on the
// non-blocking descriptor, through syscall.RawConn so that Go's poller
// keeps its state.
type nonblockReader struct {
	rc syscall.RawConn // nil: the conn is not a socket
	fn func(fd uintptr) bool
	p  []byte
	n  int
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
	r.rc = rc
	r.fn = r.readFD // one closure for the conn's life, not one per read
}

// read reads into p what the kernel holds now. It returns 0 when it holds
// nothing (EAGAIN), and also at EOF or on an error: a read that waits
// reports those.
func (r *nonblockReader) read(p []byte) int {
	if r.rc == nil {
		return 0
	}
	r.p, r.n = p, 0
	if err := r.rc.Read(r.fn); err != nil {
		r.n = 0
	}
	r.p = nil
	return r.n
}

func (r *nonblockReader) readFD(fd uintptr) bool {
	n, err := syscall.Read(int(fd), r.p)
	if err != nil || n < 0 {
		n = 0
	}
	r.n = n
	return true // never wait for readiness
}
