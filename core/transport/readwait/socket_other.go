//go:build !unix

package readwait

import "syscall"

// socketWaiter: off Unix systems a socket's readiness cannot be waited for
// without reading; the caller reads as usual.
func socketWaiter(syscall.Conn) Waiter { return nil }
