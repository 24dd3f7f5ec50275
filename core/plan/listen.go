package plan

import (
	"fmt"
	"net/netip"
)

// minListenPort is the lowest port the local proxy may take. The service
// runs as root, so a member asking for a privileged port (1–1023: SMTP's
// 25, DNS's 53) would make root squat a system service's port for them.
// Port 0 (the system picks a free port, always above 1023) is allowed.
const minListenPort = 1024

// CheckListen checks the local proxy's address a client asks for: a
// loopback IP (nothing else may reach the proxy: it has no authentication)
// and a port of 0 or minListenPort and above.
func CheckListen(s string) error {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("listen %q: want a loopback address and port, like 127.0.0.1:7890", s)
	}
	if p := ap.Port(); p != 0 && p < minListenPort {
		return fmt.Errorf("listen %q: port %d is a privileged port (below %d), which the service does not open for a client", s, p, minListenPort)
	}
	return nil
}
