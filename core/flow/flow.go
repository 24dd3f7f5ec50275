package flow

import (
	"context"
	"net"
	"net/netip"
)

// Network names used in Metadata.
const (
	TCP = "tcp"
	UDP = "udp"
)

// Metadata is what is known about a flow when it is born at an inbound. The
// router matches on it once; it then travels with the flow for the stats.
type Metadata struct {
	Network     string         // TCP or UDP
	Source      netip.AddrPort // the app's address, as the inbound saw it
	Destination Addr           // where the app wants to go
	Host        string         // a name sniffed from the payload (TLS SNI, HTTP Host, QUIC) or from the fake-IP pool; "" when unknown
	Inbound     string         // which inbound accepted the flow: "socks", "http", "tun"
	Process     string         // the program that opened the flow (its path), once a rule asked; ProcessUnknown when it could not be found
}

// ProcessUnknown is Metadata.Process for a flow whose program was looked
// up and not found, so that it is not looked up again.
const ProcessUnknown = "?"

// Handler is the engine as an inbound sees it: the inbound recognises flows,
// the handler routes and relays them.
//
// The two methods block for the life of the flow and are called on a
// goroutine the inbound owns per flow; ctx ends the flow early.
type Handler interface {
	// HandleStream connects the flow's upstream first and only then calls
	// accept, which completes the flow toward the app (the netstack answers
	// the SYN, the SOCKS inbound sends its success reply) and returns the
	// app's side of it. If no upstream can be had, HandleStream returns an
	// error without calling accept, and the inbound refuses the flow (RST, a
	// SOCKS or HTTP failure reply), so an app never sees a connection that
	// was accepted and then dropped. It relays until either side closes and
	// closes the conn that accept returned.
	HandleStream(ctx context.Context, m Metadata, accept func() (net.Conn, error)) error

	// HandlePacket relays a UDP session. The inbound's conn yields the app's
	// datagrams from ReadFrom with their destination (an Addr, *net.UDPAddr
	// or anything AddrFromNet accepts) and takes replies in WriteTo with the
	// address they came from (an Addr). It returns when the session has been
	// idle too long, when ctx ends, or when conn fails; it closes conn.
	HandlePacket(ctx context.Context, m Metadata, conn net.PacketConn) error
}
