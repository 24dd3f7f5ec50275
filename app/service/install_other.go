//go:build !linux && !darwin && !windows

package service

import (
	"errors"
	"io"
	"runtime"
)

// Install is not available on this OS.
func Install(string, io.Writer) error {
	return errors.New("service install: not supported on " + runtime.GOOS)
}

// Uninstall is not available on this OS.
func Uninstall(io.Writer) error {
	return errors.New("service uninstall: not supported on " + runtime.GOOS)
}
