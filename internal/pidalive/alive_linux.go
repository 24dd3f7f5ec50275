package pidalive

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Alive reports whether a process with this id exists and has not exited
// (a zombie, not yet reaped by its parent, has).
func Alive(pid int) bool {
	if pid <= 0 || unix.Kill(pid, 0) == unix.ESRCH {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}
