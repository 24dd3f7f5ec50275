package netstack

import (
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// ICMP echo: gVisor answers an echo request only for its own addresses, and
// the netstack owns none (it accepts every address promiscuously), so the
// request would vanish and ping would wait for nothing. These handlers
// answer every echo request at once, from the address it was sent to; other
// ICMP messages to the stack are dropped. A local answer says only that the
// tunnel is up, not that the destination is; that is what the apps' pings
// can be given without a raw socket on the far side.

func (n *Stack) handleICMPv4(_ stack.TransportEndpointID, pkt *stack.PacketBuffer) bool {
	h := header.ICMPv4(pkt.TransportHeader().Slice())
	if len(h) < header.ICMPv4MinimumSize || h.Type() != header.ICMPv4Echo || h.Code() != 0 {
		return false
	}
	n.writeEchoReply(pkt, h[:header.ICMPv4MinimumSize])
	return true
}

func (n *Stack) handleICMPv6(_ stack.TransportEndpointID, pkt *stack.PacketBuffer) bool {
	h := header.ICMPv6(pkt.TransportHeader().Slice())
	if len(h) < header.ICMPv6EchoMinimumSize || h.Type() != header.ICMPv6EchoRequest || h.Code() != 0 {
		return false
	}
	if src := pkt.Network().DestinationAddress(); src.Len() != 16 || header.IsV6MulticastAddress(src) {
		return false
	}
	n.writeEchoReply(pkt, h[:header.ICMPv6EchoMinimumSize])
	return true
}

// writeEchoReply answers the echo request in pkt, whose ICMP header is h,
// from the address it was sent to: the same header as an echo reply, and
// the same payload. A reply larger than largeDatagram is dropped.
func (n *Stack) writeEchoReply(pkt *stack.PacketBuffer, h []byte) {
	net := pkt.Network()
	src, dst := net.DestinationAddress(), net.SourceAddress()
	v4 := src.Len() == 4
	ipLen, proto := header.IPv6MinimumSize, header.IPv6ProtocolNumber
	if v4 {
		ipLen, proto = header.IPv4MinimumSize, header.IPv4ProtocolNumber
	}
	payloadLen := pkt.Data().Size()
	total := ipLen + len(h) + payloadLen
	if total > largeDatagram {
		return
	}
	bp := largePool.Get().(*[]byte)
	defer largePool.Put(bp)
	b := (*bp)[:total]
	reply := b[ipLen:]
	copy(reply, h)
	payload := reply[len(h):]
	w := sliceWriter{b: payload}
	pkt.Data().ReadTo(&w, true)
	payloadSum := checksum.Checksum(payload, 0)
	if v4 {
		n.encodeIPv4(b, total, header.ICMPv4ProtocolNumber, src, dst)
		r := header.ICMPv4(reply)
		r.SetType(header.ICMPv4EchoReply)
		r.SetChecksum(0)
		r.SetChecksum(header.ICMPv4Checksum(r[:len(h)], payloadSum))
	} else {
		encodeIPv6(b, len(reply), header.ICMPv6ProtocolNumber, src, dst)
		r := header.ICMPv6(reply)
		r.SetType(header.ICMPv6EchoReply)
		r.SetChecksum(0)
		r.SetChecksum(header.ICMPv6Checksum(header.ICMPv6ChecksumParams{
			Header:      r[:len(h)],
			Src:         src,
			Dst:         dst,
			PayloadCsum: payloadSum,
			PayloadLen:  payloadLen,
		}))
	}
	n.s.WriteRawPacket(nicID, proto, buffer.MakeWithData(b))
}
