//go:build !linux && !darwin && !windows

package sysdial

import "errors"

func bindToInterface(fd uintptr, network string, index int) error {
	return errors.New("outbound: binding to an interface is not supported on this OS")
}
