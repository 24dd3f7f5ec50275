package peercred

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// read uses SO_PEERCRED.
func read(fd int) (Cred, error) {
	c, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Cred{}, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	return Cred{UID: int(c.Uid), PID: int(c.Pid), Groups: []int{int(c.Gid)}}, nil
}
