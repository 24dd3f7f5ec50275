//go:build !unix

package readwait

import "syscall"

// socket: off Unix systems a socket's readiness cannot be waited for
// without reading; the caller reads as usual.
type socket struct{}

func (*socket) WaitRead() bool                { return false }
func (*socket) TryRead(p []byte) (int, error) { return 0, nil }

func socketOf(syscall.Conn) *socket { return nil }
