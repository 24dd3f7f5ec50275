//go:build !windows

package cli

import (
	"os"
	"syscall"
)

// startWindow replaces this process with the program path; it returns
// only when that fails.
func startWindow(path string, args []string) error {
	return syscall.Exec(path, append([]string{path}, args...), os.Environ())
}
