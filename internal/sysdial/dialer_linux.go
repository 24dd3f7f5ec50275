package sysdial

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func setSocketOptions(fd uintptr, network string, mark uint32, iface string) error {
	if mark != 0 {
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, int(mark)); err != nil {
			return fmt.Errorf("outbound: set SO_MARK %#x: %w", mark, err)
		}
	}
	if iface != "" {
		if err := unix.BindToDevice(int(fd), iface); err != nil {
			return fmt.Errorf("outbound: bind to %s: %w", iface, err)
		}
	}
	return nil
}
