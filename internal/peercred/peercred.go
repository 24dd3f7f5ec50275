//go:build linux || darwin

// Package peercred reads who is at the other end of a Unix socket, as the
// kernel recorded it when the peer connected. The single-instance socket
// and the service's API socket both admit clients by it.
package peercred

import (
	"fmt"
	"net"
)

// Cred is the peer's identity.
type Cred struct {
	UID int
	// PID is the peer process, -1 where the platform does not say
	// (macOS).
	PID int
	// Groups are the peer's groups as far as the socket tells: on Linux
	// its primary group, on macOS its groups when it connected.
	Groups []int
}

// Read returns the credentials of the peer of c, a Unix socket.
func Read(c net.Conn) (Cred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Cred{}, fmt.Errorf("not a unix socket: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Cred{}, err
	}
	var cred Cred
	var rerr error
	if err := raw.Control(func(fd uintptr) { cred, rerr = read(int(fd)) }); err != nil {
		return Cred{}, err
	}
	return cred, rerr
}
