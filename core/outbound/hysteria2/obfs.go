package hysteria2

import (
	"net"

	"github.com/skiffvpn/skiff/core/outbound/internal/xorobfs"
)

// newObfsConn wraps sock with Salamander.
func newObfsConn(sock net.PacketConn, password string) net.PacketConn {
	return xorobfs.NewConn(sock, xorobfs.Salamander, password)
}
