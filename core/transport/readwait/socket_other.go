//go:build !unix

package readwait

import "syscall"

// waitSocket cannot wait for a socket's readiness off Unix systems without
// reading; the caller reads as usual.
func waitSocket(syscall.Conn) bool { return false }

// canSocket: sockets cannot wait here.
const canSocket = false
