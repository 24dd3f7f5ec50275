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
	net := pkt.Network()
	src, dst := net.DestinationAddress(), net.SourceAddress()
	payloadLen := pkt.Data().Size()
	total := header.IPv4MinimumSize + header.ICMPv4MinimumSize + payloadLen
	if total > largeDatagram {
		return true
	}
	bp := largePool.Get().(*[]byte)
	defer largePool.Put(bp)
	b := (*bp)[:total]
	n.encodeIPv4(b, total, header.ICMPv4ProtocolNumber, src, dst)
	reply := header.ICMPv4(b[header.IPv4MinimumSize:])
	copy(reply, h[:header.ICMPv4MinimumSize])
	reply.SetType(header.ICMPv4EchoReply)
	reply.SetChecksum(0)
	payload := reply[header.ICMPv4MinimumSize:]
	w := sliceWriter{b: payload}
	pkt.Data().ReadTo(&w, true)
	reply.SetChecksum(header.ICMPv4Checksum(reply[:header.ICMPv4MinimumSize], checksum.Checksum(payload, 0)))
	n.s.WriteRawPacket(nicID, header.IPv4ProtocolNumber, buffer.MakeWithData(b))
	return true
}

func (n *Stack) handleICMPv6(_ stack.TransportEndpointID, pkt *stack.PacketBuffer) bool {
	h := header.ICMPv6(pkt.TransportHeader().Slice())
	if len(h) < header.ICMPv6EchoMinimumSize || h.Type() != header.ICMPv6EchoRequest || h.Code() != 0 {
		return false
	}
	net := pkt.Network()
	src, dst := net.DestinationAddress(), net.SourceAddress()
	if src.Len() != 16 || header.IsV6MulticastAddress(src) {
		return false
	}
	payloadLen := pkt.Data().Size()
	total := header.IPv6MinimumSize + header.ICMPv6EchoMinimumSize + payloadLen
	if total > largeDatagram {
		return true
	}
	bp := largePool.Get().(*[]byte)
	defer largePool.Put(bp)
	b := (*bp)[:total]
	header.IPv6(b).Encode(&header.IPv6Fields{
		PayloadLength:     uint16(header.ICMPv6EchoMinimumSize + payloadLen),
		TransportProtocol: header.ICMPv6ProtocolNumber,
		HopLimit:          64,
		SrcAddr:           src,
		DstAddr:           dst,
	})
	reply := header.ICMPv6(b[header.IPv6MinimumSize:])
	copy(reply, h[:header.ICMPv6EchoMinimumSize])
	reply.SetType(header.ICMPv6EchoReply)
	reply.SetChecksum(0)
	payload := reply[header.ICMPv6EchoMinimumSize:]
	w := sliceWriter{b: payload}
	pkt.Data().ReadTo(&w, true)
	reply.SetChecksum(header.ICMPv6Checksum(header.ICMPv6ChecksumParams{
		Header:      reply[:header.ICMPv6EchoMinimumSize],
		Src:         src,
		Dst:         dst,
		PayloadCsum: checksum.Checksum(payload, 0),
		PayloadLen:  payloadLen,
	}))
	n.s.WriteRawPacket(nicID, header.IPv6ProtocolNumber, buffer.MakeWithData(b))
	return true
}
