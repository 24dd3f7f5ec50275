//go:build !linux && !darwin && !windows

package tun

import (
	"errors"
	"runtime"
)

func enableKillSwitch(k *KillSwitch, st *stateFile) error {
	return errors.New("not supported on " + runtime.GOOS)
}
