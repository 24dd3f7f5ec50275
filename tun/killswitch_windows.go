package tun

import "errors"

func enableKillSwitch(k *KillSwitch, st *stateFile) error {
	return errors.New("not built yet on windows")
}
