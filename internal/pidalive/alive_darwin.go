package pidalive

import "golang.org/x/sys/unix"

// Alive reports whether a process with this id exists.
func Alive(pid int) bool {
	return pid > 0 && unix.Kill(pid, 0) != unix.ESRCH
}
