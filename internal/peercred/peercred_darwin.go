package peercred

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// read uses LOCAL_PEERCRED: the effective uid and the groups.
func read(fd int) (Cred, error) {
	c, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Cred{}, fmt.Errorf("LOCAL_PEERCRED: %w", err)
	}
	cred := Cred{UID: int(c.Uid), PID: -1}
	for i := 0; i < int(c.Ngroups) && i < len(c.Groups); i++ {
		cred.Groups = append(cred.Groups, int(c.Groups[i]))
	}
	return cred, nil
}
