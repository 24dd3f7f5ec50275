package sysdial

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

const (
	ipUnicastIf   = 31 // IP_UNICAST_IF
	ipv6UnicastIf = 31 // IPV6_UNICAST_IF
)

func bindToInterface(fd uintptr, network string, index int) error {
	h := windows.Handle(fd)
	if strings.HasSuffix(network, "6") {
		return windows.SetsockoptInt(h, windows.IPPROTO_IPV6, ipv6UnicastIf, index)
	}
	// IP_UNICAST_IF takes the index in network byte order.
	var be [4]byte
	binary.BigEndian.PutUint32(be[:], uint32(index))
	return windows.SetsockoptInt(h, windows.IPPROTO_IP, ipUnicastIf, int(*(*uint32)(unsafe.Pointer(&be[0]))))
}
