// Package sysdial opens Skiff's own sockets on the operating system's
// network stack: the Dialer interface every outbound dials its server
// with, SystemDialer (marked or interface-bound sockets, so that Skiff's
// traffic bypasses its own tunnel), and a resolver whose queries leave on
// those same sockets.
//
// It is a leaf so that both the engine's outbounds (core/outbound, which
// re-exports Dialer and SystemDialer) and the TUN layer (tun, whose bypass
// dialer implements Dialer) can use it without tun importing core.
package sysdial
