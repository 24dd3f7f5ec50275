package hysteria2

import "github.com/skiffvpn/skiff/core/outbound/internal/quicconn"

// fragment returns fragment i of m's payload, cut by
// quicconn.FragmentPlan, as a message sharing m's header fields; packetID
// names the whole datagram.
func fragment(m *udpMessage, packetID uint16, chunk, count, i int) udpMessage {
	f := *m
	f.PacketID = packetID
	f.FragID = uint8(i)
	f.FragCount = uint8(count)
	lo := i * chunk
	hi := min(lo+chunk, len(m.Payload))
	f.Payload = m.Payload[lo:hi]
	return f
}

// defragger reassembles the fragmented datagrams of one UDP session (see
// quicconn.Defragger).
type defragger struct{ quicconn.Defragger }

// feed takes one message and returns a complete datagram's payload when it
// has one.
func (d *defragger) feed(m *udpMessage) ([]byte, bool) {
	return d.Feed(m.PacketID, m.FragID, m.FragCount, m.Payload)
}
