//go:build !linux

package hysteria2

import "net"

// newObfsConn wraps sock with Salamander. Outside Linux quic-go reads and
// writes it one packet at a time.
func newObfsConn(sock net.PacketConn, password string) net.PacketConn {
	return newSalamanderConn(sock, password)
}
