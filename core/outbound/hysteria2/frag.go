package hysteria2

import "github.com/skiffvpn/skiff/core/outbound/internal/quicconn"

// maxUDPPacket is the largest UDP payload.
const maxUDPPacket = quicconn.MaxUDPPacket

// fragmentPlan says how to cut a UDP payload into fragments whose messages
// fit in maxSize bytes: count fragments of at most chunk payload bytes.
func fragmentPlan(headerLen, payloadLen, maxSize int) (chunk, count int, err error) {
	return quicconn.FragmentPlan(headerLen, payloadLen, maxSize)
}

// fragment returns fragment i of m's payload, cut by fragmentPlan, as a
// message sharing m's header fields; packetID names the whole datagram.
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
