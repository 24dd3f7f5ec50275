package quicconn

import "errors"

// MaxUDPPacket bounds a reassembled datagram: fragments adding up to more
// than a UDP datagram can hold are a lying server's.
const MaxUDPPacket = 65535

// ErrTooManyFragments says a datagram cannot be cut into 255 fragments.
var ErrTooManyFragments = errors.New("UDP datagram needs more than 255 fragments")

// FragmentPlan says how to cut a UDP payload into fragments whose messages
// fit in maxSize bytes: count fragments of at most chunk payload bytes.
func FragmentPlan(headerLen, payloadLen, maxSize int) (chunk, count int, err error) {
	chunk = maxSize - headerLen
	if chunk <= 0 {
		return 0, 0, ErrTooManyFragments
	}
	count = (payloadLen + chunk - 1) / chunk
	if count == 0 {
		count = 1
	}
	if count > 255 {
		return 0, 0, ErrTooManyFragments
	}
	return chunk, count, nil
}

// Defragger reassembles the fragmented datagrams of one UDP session. Like
// the reference implementations it holds one datagram at a time: a
// fragment of a newer datagram drops the incomplete one, which the
// protocols allow (a datagram with a lost fragment is discarded whole).
type Defragger struct {
	packetID uint16
	frags    [][]byte // payload of each fragment received, by fragment ID; aliases the callers' buffers
	have     int      // fragments received
	size     int      // their payload bytes
}

// Feed takes one fragment and returns a complete datagram's payload when
// it has one; fragments adding up to more than MaxUDPPacket drop the
// datagram. An unfragmented message (count ≤ 1) is returned as is; the
// payload of a reassembled one is a new buffer. fragID must be below count.
func (d *Defragger) Feed(packetID uint16, fragID, count uint8, payload []byte) ([]byte, bool) {
	if count <= 1 {
		return payload, true
	}
	if fragID >= count {
		return nil, false
	}
	if packetID != d.packetID || len(d.frags) != int(count) {
		d.reset(packetID, int(count))
	}
	if d.frags[fragID] != nil {
		return nil, false // duplicate
	}
	p := payload
	if p == nil {
		p = []byte{}
	}
	if d.size+len(p) > MaxUDPPacket {
		// No UDP datagram is this large: a lying server. Dropping it
		// also bounds what one session holds to one datagram's worth.
		d.reset(0, 0)
		return nil, false
	}
	d.frags[fragID] = p
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

func (d *Defragger) reset(packetID uint16, count int) {
	clear(d.frags)
	d.frags = d.frags[:0]
	for range count {
		d.frags = append(d.frags, nil)
	}
	d.packetID = packetID
	d.have = 0
	d.size = 0
}
