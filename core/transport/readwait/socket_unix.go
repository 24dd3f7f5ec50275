//go:build unix

package readwait

import (
	"syscall"
	"unsafe"
)

// socket waits until a socket has data, EOF or an error, through Go's
// poller (syscall.RawConn), peeking instead of reading. A closed socket or
// a passed read deadline ends the wait too: the Read that follows reports
// it. Its TryRead is one read(2) on the non-blocking descriptor.
type socket struct {
	rc   syscall.RawConn
	read func(fd uintptr) bool // readFD, made once: TryRead does not allocate
	p    []byte
	n    int
}

func socketOf(sc syscall.Conn) *socket {
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &socket{rc: rc}
	s.read = s.readFD
	return s
}

func (s *socket) WaitRead() bool {
	s.rc.Read(peekReady)
	return true
}

// TryRead reads what the kernel holds now. At EOF, on an error and on a
// closed socket it returns (0, nil): the next Read reports them.
func (s *socket) TryRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.p, s.n = p, 0
	if s.rc.Read(s.read) != nil {
		s.n = 0
	}
	s.p = nil
	return s.n, nil
}

func (s *socket) readFD(fd uintptr) bool {
	n, err := syscall.Read(int(fd), s.p)
	if err != nil || n < 0 {
		n = 0
	}
	s.n = n
	return true // never wait for readiness
}

// Ready reports whether a read of the non-blocking socket fd would not
// block: it holds data, the peer has closed, or it has an error. It peeks
// at one byte and never waits.
func Ready(fd uintptr) bool {
	var b [1]byte
	_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno != syscall.EAGAIN && errno != syscall.EWOULDBLOCK
}

// peekReady is Ready as a syscall.RawConn read callback: returning false
// makes RawConn.Read wait for readability and call it again.
func peekReady(fd uintptr) bool { return Ready(fd) }
