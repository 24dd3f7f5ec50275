//go:build !windows

package main

import (
	"os"
	"syscall"
)

// replace makes this process the program path with args (its process id
// and terminal kept); it returns only when that fails.
func replace(path string, args []string) error {
	return syscall.Exec(path, append([]string{path}, args...), os.Environ())
}
