package netstack

import (
	"net/netip"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// ipv4Packet returns an IPv4 TCP packet of n bytes whose total-length field
// says totLen.
func ipv4Packet(n, totLen int) []byte {
	b := make([]byte, n)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(totLen),
		TTL:         64,
		Protocol:    uint8(header.TCPProtocolNumber),
		SrcAddr:     tcpip.AddrFrom4(netip.MustParseAddr("172.19.0.1").As4()),
		DstAddr:     tcpip.AddrFrom4(netip.MustParseAddr("198.18.0.9").As4()),
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	return b
}

func ipv6Packet(n, payloadLen int) []byte {
	b := make([]byte, n)
	header.IPv6(b).Encode(&header.IPv6Fields{
		PayloadLength:     uint16(payloadLen),
		TransportProtocol: header.TCPProtocolNumber,
		HopLimit:          64,
		SrcAddr:           tcpip.AddrFrom16(netip.MustParseAddr("fdfe:dcba:9876::1").As16()),
		DstAddr:           tcpip.AddrFrom16(netip.MustParseAddr("2001:db8::9").As16()),
	})
	return b
}

func TestSuperPacket(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		gso     uint8
		ok      bool
		proto   tcpip.NetworkProtocolNumber
		wantLen int // IPv4 total length or IPv6 payload length after the call
	}{
		{"ipv4 plain", ipv4Packet(1500, 1500), vnetHdrGSONone, true, header.IPv4ProtocolNumber, 1500},
		{"ipv4 super, length set", ipv4Packet(60000, 60000), vnetHdrGSOTCPv4, true, header.IPv4ProtocolNumber, 60000},
		{"ipv4 super, length left to us", ipv4Packet(60000, 0), vnetHdrGSOTCPv4, true, header.IPv4ProtocolNumber, 60000},
		{"ipv4 super, ECN bit removed by the reader", ipv4Packet(30000, 1500), vnetHdrGSOTCPv4, true, header.IPv4ProtocolNumber, 30000},
		{"ipv6 super", ipv6Packet(50000, 0), vnetHdrGSOTCPv6, true, header.IPv6ProtocolNumber, 50000 - header.IPv6MinimumSize},
		{"ipv6 plain", ipv6Packet(1280, 1240), vnetHdrGSONone, true, header.IPv6ProtocolNumber, 1240},
		{"udp gso not asked for", ipv4Packet(3000, 3000), 5, false, 0, 0},
		{"short ipv4", ipv4Packet(20, 20)[:19], vnetHdrGSONone, false, 0, 0},
		{"short ipv6", ipv6Packet(40, 0)[:39], vnetHdrGSONone, false, 0, 0},
		{"not ip", []byte{0x00, 1, 2, 3}, vnetHdrGSONone, false, 0, 0},
		{"empty", nil, vnetHdrGSONone, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proto, ok := superPacket(tt.data[:min(len(tt.data), vnetHeadLen)], len(tt.data), tt.gso)
			if ok != tt.ok || proto != tt.proto {
				t.Fatalf("superPacket = %v, %v; want %v, %v", proto, ok, tt.proto, tt.ok)
			}
			if !ok {
				return
			}
			switch proto {
			case header.IPv4ProtocolNumber:
				ip := header.IPv4(tt.data)
				if got := int(ip.TotalLength()); got != tt.wantLen {
					t.Errorf("total length %d, want %d", got, tt.wantLen)
				}
				if !ip.IsChecksumValid() {
					t.Errorf("IPv4 header checksum invalid after the call")
				}
			case header.IPv6ProtocolNumber:
				if got := int(header.IPv6(tt.data).PayloadLength()); got != tt.wantLen {
					t.Errorf("payload length %d, want %d", got, tt.wantLen)
				}
			}
		})
	}
}
