package tuic

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/skiffvpn/skiff/core/flow"
)

// Wire constants from the TUIC v5 specification (EAimTY/tuic SPEC.md).
// Every command starts with VER and TYPE; integers are big-endian.
const (
	version = 0x05

	cmdAuthenticate = 0x00 // UUID 16 | TOKEN 32, on a unidirectional stream
	cmdConnect      = 0x01 // ADDR, on a bidirectional stream; the stream's data follows
	cmdPacket       = 0x02 // ASSOC_ID | PKT_ID | FRAG_TOTAL | FRAG_ID | SIZE | ADDR | data
	cmdDissociate   = 0x03 // ASSOC_ID, on a unidirectional stream
	cmdHeartbeat    = 0x04 // nothing, in a datagram

	// packetHeaderFixed is a Packet command before its address: VER,
	// TYPE, ASSOC_ID (2), PKT_ID (2), FRAG_TOTAL, FRAG_ID, SIZE (2).
	packetHeaderFixed = 2 + 2 + 2 + 1 + 1 + 2

	tokenLen = 32
)

// Address types: not SOCKS's codes.
const (
	addrNone   = 0xff // no address: later fragments of a packet
	addrDomain = 0x00
	addrIPv4   = 0x01
	addrIPv6   = 0x02
)

var addrTypes = flow.AddrTypes{IPv4: addrIPv4, Name: addrDomain, IPv6: addrIPv6}

var (
	errShortPacket = errors.New("packet command truncated")
	errNotPacket   = errors.New("not a TUIC v5 packet command")
	errBadFragment = errors.New("packet command: fragment ID not below fragment total")
	errSizeLie     = errors.New("packet command: SIZE does not match the data")
)

// appendAddr appends dst as TUIC writes an address: type, host, port.
func appendAddr(b []byte, dst flow.Addr) ([]byte, error) {
	b, err := dst.AppendHost(b, addrTypes)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint16(b, dst.Port), nil
}

// parseAddr reads an address from the front of b and returns it and its
// length; the None type gives an invalid Addr.
func parseAddr(b []byte) (flow.Addr, int, error) {
	if len(b) > 0 && b[0] == addrNone {
		return flow.Addr{}, 1, nil
	}
	return flow.ParseHostPort(b, addrTypes)
}

// appendAuthenticate appends the Authenticate command.
func appendAuthenticate(b []byte, uuid [16]byte, token []byte) []byte {
	b = append(b, version, cmdAuthenticate)
	b = append(b, uuid[:]...)
	return append(b, token...)
}

// appendConnect appends the Connect command for dst.
func appendConnect(b []byte, dst flow.Addr) ([]byte, error) {
	return appendAddr(append(b, version, cmdConnect), dst)
}

// appendDissociate appends the Dissociate command for a UDP session.
func appendDissociate(b []byte, assoc uint16) []byte {
	return binary.BigEndian.AppendUint16(append(b, version, cmdDissociate), assoc)
}

// heartbeat is the Heartbeat command.
var heartbeat = []byte{version, cmdHeartbeat}

// packet is one Packet command: a UDP datagram or a fragment of one.
type packet struct {
	Assoc     uint16
	PacketID  uint16
	FragTotal uint8
	FragID    uint8
	Addr      flow.Addr // invalid for the None address
	Size      int       // SIZE as read: the length of the data
	Payload   []byte
}

// appendPacketHeader appends p's command up to its data; addr is p.Addr
// already encoded (appendAddr), so that a session sending to one peer
// encodes it once.
func appendPacketHeader(b []byte, p *packet, addr []byte) []byte {
	b = append(b, version, cmdPacket)
	b = binary.BigEndian.AppendUint16(b, p.Assoc)
	b = binary.BigEndian.AppendUint16(b, p.PacketID)
	b = append(b, p.FragTotal, p.FragID)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.Payload)))
	return append(b, addr...)
}

// parsePacket reads a whole Packet command (a datagram's contents) into p;
// p.Payload aliases b.
func parsePacket(b []byte, p *packet) error {
	n, err := parsePacketHeader(b, p)
	if err != nil {
		return err
	}
	if len(b)-n != p.Size {
		return errSizeLie
	}
	p.Payload = b[n:]
	return nil
}

// parsePacketHeader reads a Packet command's header from the front of b
// into p (p.Size is the length of the data that follows; p.Payload is
// nil) and returns the header's length. b starts with VER and TYPE.
func parsePacketHeader(b []byte, p *packet) (int, error) {
	if len(b) < 2 {
		return 0, errShortPacket
	}
	if b[0] != version || b[1] != cmdPacket {
		return 0, errNotPacket
	}
	if len(b) < packetHeaderFixed+1 {
		return 0, errShortPacket
	}
	p.Assoc = binary.BigEndian.Uint16(b[2:])
	p.PacketID = binary.BigEndian.Uint16(b[4:])
	p.FragTotal = b[6]
	p.FragID = b[7]
	size := int(binary.BigEndian.Uint16(b[8:]))
	if p.FragTotal == 0 || p.FragID >= p.FragTotal {
		return 0, errBadFragment
	}
	a, n, err := parseAddr(b[packetHeaderFixed:])
	if err != nil {
		return 0, fmt.Errorf("packet command: %w", err)
	}
	p.Addr = a
	p.Size = size
	p.Payload = nil
	return packetHeaderFixed + n, nil
}
