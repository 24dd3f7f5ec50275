//go:build linux

package process

import (
	"os"
	"syscall"
)

// ownerOf returns the uid that owns a /proc/PID folder, -1 if unknown.
func ownerOf(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
