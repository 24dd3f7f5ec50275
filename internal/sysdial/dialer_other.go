//go:build !linux

package sysdial

import (
	"fmt"
	"net"
)

// setSocketOptions binds the socket to an interface where the OS offers it;
// marks exist only on Linux and are ignored elsewhere. The per-OS binding
// lives in the tun package's platform code, which supplies Interface.
func setSocketOptions(fd uintptr, network string, mark uint32, iface string) error {
	if iface == "" {
		return nil
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return fmt.Errorf("outbound: bind to %s: %w", iface, err)
	}
	return bindToInterface(fd, network, ifi.Index)
}
