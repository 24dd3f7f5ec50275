//go:build !linux

package udpgro

import "net"

// Wrap returns pc: receive offload is only used on Linux.
func Wrap(pc net.PacketConn) net.PacketConn { return pc }
