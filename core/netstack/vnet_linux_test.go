package netstack

import (
	"encoding/binary"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// gsoPacket builds a packet as gVisor's TCP hands it to the link endpoint:
// an l3-byte network header, a 20-byte TCP header and payload bytes.
func gsoPacket(l3, payload int, gso stack.GSO) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: l3 + header.TCPMinimumSize,
		Payload:            buffer.MakeWithData(make([]byte, payload)),
	})
	pkt.TransportHeader().Push(header.TCPMinimumSize)
	pkt.NetworkHeader().Push(l3)
	pkt.GSOOptions = gso
	return pkt
}

func TestVnetHeader(t *testing.T) {
	type want struct {
		flags, gsoType                         uint8
		hdrLen, gsoSize, csumStart, csumOffset uint16
	}
	v4 := stack.GSO{Type: stack.GSOTCPv4, NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MSS: 8960, L3HdrLen: header.IPv4MinimumSize}
	v6 := stack.GSO{Type: stack.GSOTCPv6, NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MSS: 1440, L3HdrLen: header.IPv6MinimumSize}
	tests := []struct {
		name string
		pkt  *stack.PacketBuffer
		want want
	}{
		{"tcp4 64k segment", gsoPacket(20, 65000, v4), want{vnetHdrFNeedsCsum, vnetHdrGSOTCPv4, 40, 8960, 20, 16}},
		{"tcp4 one mss: checksum only", gsoPacket(20, 8960, v4), want{vnetHdrFNeedsCsum, vnetHdrGSONone, 0, 0, 20, 16}},
		{"tcp4 pure ack", gsoPacket(20, 0, v4), want{vnetHdrFNeedsCsum, vnetHdrGSONone, 0, 0, 20, 16}},
		{"tcp6 segment", gsoPacket(40, 20000, v6), want{vnetHdrFNeedsCsum, vnetHdrGSOTCPv6, 60, 1440, 40, 16}},
		{"no gso (udp, icmp)", gsoPacket(20, 1000, stack.GSO{}), want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.pkt.DecRef()
			var h [vnetHdrLen]byte
			if err := vnetHeader(&h, tt.pkt); err != nil {
				t.Fatal(err)
			}
			got := want{
				flags:      h[0],
				gsoType:    h[1],
				hdrLen:     binary.NativeEndian.Uint16(h[2:]),
				gsoSize:    binary.NativeEndian.Uint16(h[4:]),
				csumStart:  binary.NativeEndian.Uint16(h[6:]),
				csumOffset: binary.NativeEndian.Uint16(h[8:]),
			}
			if got != tt.want {
				t.Errorf("header %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("unknown gso type", func(t *testing.T) {
		pkt := gsoPacket(20, 20000, stack.GSO{Type: stack.GSOGvisor, MSS: 1000})
		defer pkt.DecRef()
		var h [vnetHdrLen]byte
		if err := vnetHeader(&h, pkt); err == nil {
			t.Error("no error for a gVisor-GSO packet")
		}
	})
}
