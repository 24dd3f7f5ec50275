//go:build unix

package readwait

import (
	"syscall"
	"unsafe"
)

// socket waits until a socket has data, EOF or an error, through Go's
// poller (syscall.RawConn), peeking instead of reading. A closed socket or
// a passed read deadline ends the wait too: the Read that follows reports
// it.
type socket struct{ rc syscall.RawConn }

func socketWaiter(sc syscall.Conn) Waiter {
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return socket{rc}
}

func (s socket) WaitRead() bool {
	s.rc.Read(peekReady)
	return true
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
