package process

import (
	"errors"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	iphlpapi                = windows.NewLazySystemDLL("iphlpapi.dll")
	procGetExtendedTcpTable = iphlpapi.NewProc("GetExtendedTcpTable")
	procGetExtendedUdpTable = iphlpapi.NewProc("GetExtendedUdpTable")
)

const (
	tcpTableOwnerPIDAll = 5 // TCP_TABLE_OWNER_PID_ALL
	udpTableOwnerPID    = 1 // UDP_TABLE_OWNER_PID
)

// windowsFinder reads the socket tables of iphlpapi, then the image path of
// the socket's process. Finder's cache keeps the answers.
type windowsFinder struct{}

func newOSFinder() osFinder { return windowsFinder{} }

func (windowsFinder) find(network string, src netip.AddrPort) (Info, error) {
	var proc *windows.LazyProc
	var class uintptr
	var tables [2]ownerTable
	switch network {
	case "tcp":
		proc, class, tables = procGetExtendedTcpTable, tcpTableOwnerPIDAll, [2]ownerTable{tcp4Table, tcp6Table}
	case "udp":
		proc, class, tables = procGetExtendedUdpTable, udpTableOwnerPID, [2]ownerTable{udp4Table, udp6Table}
	default:
		return Info{}, fmt.Errorf("process: network %q", network)
	}
	// An IPv4 source is in the IPv4 table, or in the IPv6 one as a mapped
	// address of a dual-stack socket; an IPv6 source only in the IPv6 one.
	families := []struct {
		af uint32
		t  ownerTable
	}{{windows.AF_INET, tables[0]}, {windows.AF_INET6, tables[1]}}
	if src.Addr().Is6() {
		families = families[1:]
	}
	for _, f := range families {
		buf, err := socketTable(proc, f.af, class)
		if err != nil {
			return Info{}, err
		}
		key := src
		if f.af == windows.AF_INET6 && src.Addr().Is4() {
			key = netip.AddrPortFrom(netip.AddrFrom16(src.Addr().As16()), src.Port())
		}
		pid, err := findOwner(buf, f.t, key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Info{}, err
		}
		path, err := imagePath(pid)
		if err != nil {
			return Info{}, err
		}
		return Info{PID: int(pid), UID: -1, Path: path}, nil
	}
	return Info{}, ErrNotFound
}

// socketTable returns the table of proc (GetExtendedTcpTable or
// GetExtendedUdpTable) for address family af, growing its buffer while the
// table grows between the calls.
func socketTable(proc *windows.LazyProc, af uint32, class uintptr) ([]byte, error) {
	if err := proc.Find(); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	size := uint32(4096)
	for range 8 {
		buf := make([]byte, size)
		n := size
		r, _, _ := proc.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0, uintptr(af), class, 0)
		switch windows.Errno(r) {
		case 0:
			return buf[:min(n, size)], nil
		case windows.ERROR_INSUFFICIENT_BUFFER:
			size = n + n/4 + 1024 // room for the sockets opened since
		default:
			return nil, fmt.Errorf("process: %s: %w", proc.Name, windows.Errno(r))
		}
	}
	return nil, fmt.Errorf("process: %s: the table kept growing", proc.Name)
}

// imagePath returns the executable of process pid.
func imagePath(pid uint32) (string, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "", fmt.Errorf("process: opening process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return "", fmt.Errorf("process: image of process %d: %w", pid, err)
	}
	return windows.UTF16ToString(buf[:min(int(n), len(buf))]), nil
}
