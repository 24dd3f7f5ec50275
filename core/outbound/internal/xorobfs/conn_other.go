//go:build !linux

package xorobfs

import "net"

// NewConn wraps sock with scheme s and password. Outside Linux quic-go
// reads and writes it one packet at a time.
func NewConn(sock net.PacketConn, s Scheme, password string) net.PacketConn {
	return newConn(sock, s, password)
}
