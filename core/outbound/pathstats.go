package outbound

import "time"

// PathStats are live figures of an outbound's path to its server, for
// judging whether the path is throttled (core/group). Counters are totals
// since the current connection to the server opened.
type PathStats struct {
	RTT           time.Duration // smoothed round-trip time
	MinRTT        time.Duration // the least round-trip time seen on the path
	BytesSent     uint64
	BytesReceived uint64
	PacketsSent   uint64
	PacketsLost   uint64
	DeclaredRx    uint64 // the receive rate the client declared to the server, bytes/s; 0: none
}

// PathStatser is implemented by outbounds that know their path's figures
// (a QUIC connection does). ok is false when there is no live path.
type PathStatser interface {
	PathStats() (s PathStats, ok bool)
}
