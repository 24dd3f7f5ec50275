//go:build !linux && !darwin && !windows

package tun

import (
	"errors"
	"runtime"
)

const goos = runtime.GOOS

func openPlatform(t *Tunnel) error {
	t.bind = newBypass(0)
	return errors.New("tun: TUN mode is not supported on " + runtime.GOOS)
}

func undo(c Change) error { return errors.New("tun: cannot undo changes on " + runtime.GOOS) }

// repairPlatform has nothing to put back here: the routes are the
// system's, changed with its commands, and the bypass follows the default
// interface by itself.
func repairPlatform(t *Tunnel) ([]string, error) { return nil, nil }

// DeviceFree returns nil here: the system names the device (macOS), or
// Wintun's adapter (Windows); see tun_linux.go.
func DeviceFree(string) error { return nil }
