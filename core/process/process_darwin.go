package process

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// darwinFinder reads the kernel's socket lists (sysctl
// net.inet.{tcp,udp}.pcblist_n) for the PID that last used the socket, then
// the PID's executable (sysctl kern.procargs2). Finder's cache keeps the
// answers.
type darwinFinder struct{}

func newOSFinder() osFinder { return darwinFinder{} }

func (darwinFinder) find(network string, src netip.AddrPort) (Info, error) {
	var name string
	switch network {
	case "tcp":
		name = "net.inet.tcp.pcblist_n"
	case "udp":
		name = "net.inet.udp.pcblist_n"
	default:
		return Info{}, fmt.Errorf("process: network %q", network)
	}
	buf, err := unix.SysctlRaw(name)
	if err != nil {
		return Info{}, fmt.Errorf("process: sysctl %s: %w", name, err)
	}
	owner, err := findPcbOwner(buf, src)
	if err != nil {
		return Info{}, err
	}
	pid := owner.pid
	args, err := unix.SysctlRaw("kern.procargs2", int(pid))
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return Info{}, ErrNotFound // it ended since
		}
		return Info{}, fmt.Errorf("process: the path of process %d: %w", pid, err)
	}
	path, err := execPath(args)
	if err != nil {
		return Info{}, fmt.Errorf("process: the path of process %d: %w", pid, err)
	}
	return Info{PID: int(pid), UID: int(owner.uid), Path: path}, nil
}
