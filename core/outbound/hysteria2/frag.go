package hysteria2

import "errors"

var errTooManyFragments = errors.New("UDP datagram needs more than 255 fragments")

// fragmentPlan says how to cut a UDP payload into fragments whose messages
// fit in maxSize bytes: count fragments of at most chunk payload bytes.
func fragmentPlan(headerLen, payloadLen, maxSize int) (chunk, count int, err error) {
	chunk = maxSize - headerLen
	if chunk <= 0 {
		return 0, 0, errTooManyFragments
	}
	count = (payloadLen + chunk - 1) / chunk
	if count == 0 {
		count = 1
	}
	if count > 255 {
		return 0, 0, errTooManyFragments
	}
	return chunk, count, nil
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

// defragger reassembles the fragmented datagrams of one UDP session. Like
// the reference implementation it holds one datagram at a time: a fragment
// of a newer datagram drops the incomplete one, which the protocol allows
// (a datagram with a lost fragment is discarded whole).
type defragger struct {
	packetID uint16
	frags    [][]byte // payload of each fragment received, by fragment ID; aliases the datagram buffers
	have     int      // fragments received
	size     int      // their payload bytes
}

// feed takes one message and returns a complete datagram's payload when it
// has one; fragments that add up to more than a UDP datagram can hold
// (maxUDPPacket) drop the datagram. An unfragmented message is returned as is; the payload of a
// reassembled one is a new buffer.
func (d *defragger) feed(m *udpMessage) ([]byte, bool) {
	if m.FragCount <= 1 {
		return m.Payload, true
	}
	if m.PacketID != d.packetID || len(d.frags) != int(m.FragCount) {
		d.reset(m.PacketID, int(m.FragCount))
	}
	if d.frags[m.FragID] != nil {
		return nil, false // duplicate
	}
	p := m.Payload
	if p == nil {
		p = []byte{}
	}
	if d.size+len(p) > maxUDPPacket {
		// No UDP datagram is this large: a lying server. Dropping it
		// also bounds what one session holds to one datagram's worth.
		d.reset(0, 0)
		return nil, false
	}
	d.frags[m.FragID] = p
	d.have++
	d.size += len(p)
	if d.have < len(d.frags) {
		return nil, false
	}
	out := make([]byte, 0, d.size)
	for _, f := range d.frags {
		out = append(out, f...)
	}
	d.reset(0, 0)
	return out, true
}

func (d *defragger) reset(packetID uint16, count int) {
	clear(d.frags)
	d.frags = d.frags[:0]
	for range count {
		d.frags = append(d.frags, nil)
	}
	d.packetID = packetID
	d.have = 0
	d.size = 0
}
