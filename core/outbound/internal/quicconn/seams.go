package quicconn

import (
	"context"
	"fmt"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound"
)

// CheckStream checks a TCP flow's network and destination for proto's
// DialContext via name.
func CheckStream(proto, name, network string, dst flow.Addr) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%s: %s via %s: network %q not supported", proto, dst, name, network)
	}
	if !dst.IsValid() {
		return fmt.Errorf("%s: via %s: invalid destination", proto, name)
	}
	return nil
}

// PathStats returns qc's figures for the failover group's throttle
// judging, with the receive rate the client declared (bytes/s; 0: none).
func PathStats(qc *quic.Conn, declaredRx uint64) outbound.PathStats {
	s := qc.ConnectionStats()
	return outbound.PathStats{
		RTT:           s.SmoothedRTT,
		MinRTT:        s.MinRTT,
		BytesSent:     s.BytesSent,
		BytesReceived: s.BytesReceived,
		PacketsSent:   s.PacketsSent,
		PacketsLost:   s.PacketsLost,
		DeclaredRx:    declaredRx,
	}
}

// ReceiveDatagrams hands each of qc's QUIC datagrams to handle until qc
// dies. A datagram is the caller's to keep.
func ReceiveDatagrams(qc *quic.Conn, handle func([]byte)) {
	for {
		b, err := qc.ReceiveDatagram(context.Background())
		if err != nil {
			return // the connection is closed
		}
		handle(b)
	}
}

// Guarded runs f, one of qc's readers, with a panic closing qc (with
// code) rather than ending the process; panics reports it (see package
// guard). The next flow then dials anew.
func Guarded(qc *quic.Conn, code quic.ApplicationErrorCode, panics *guard.Reporter, what string, f func()) {
	panicked := true
	defer func() {
		if panicked {
			qc.CloseWithError(code, "")
		}
	}()
	defer panics.Recover(what)
	f()
	panicked = false
}
