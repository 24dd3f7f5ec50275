package vless

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
)

// Commands of a VLESS request.
const (
	cmdTCP byte = 1
	cmdUDP byte = 2
	cmdMux byte = 3 // Mux.Cool; here XUDP (xudp.go); no address follows
)

// Address types of a VLESS request.
const (
	atypIPv4   byte = 1
	atypDomain byte = 2
	atypIPv6   byte = 3
)

// maxPacket is the largest datagram a UDP stream frames (u16 length).
const maxPacket = 0xffff

// UUID is a VLESS user id.
type UUID = node.UUID

// appendRequest appends a VLESS request header for cmd toward dst: version
// 0, the user id, the addons (protobuf field 1, flow, when flow is set), the
// command, and (except for Mux) the port (big-endian) and the address.
func appendRequest(b []byte, id *UUID, flowName string, cmd byte, dst flow.Addr) ([]byte, error) {
	b = append(b, 0)
	b = append(b, id[:]...)
	if flowName == "" {
		b = append(b, 0)
	} else {
		// Addons{Flow: flowName}: tag 1, wire type 2, length, bytes.
		if len(flowName) > 127 {
			return nil, errors.New("vless: flow name too long")
		}
		b = append(b, byte(2+len(flowName)), 0x0a, byte(len(flowName)))
		b = append(b, flowName...)
	}
	b = append(b, cmd)
	if cmd == cmdMux {
		return b, nil
	}
	b = binary.BigEndian.AppendUint16(b, dst.Port)
	b, err := dst.AppendHost(b, flow.AddrTypes{IPv4: atypIPv4, Name: atypDomain, IPv6: atypIPv6})
	if err != nil {
		return nil, fmt.Errorf("vless: %w", err)
	}
	return b, nil
}

// readResponse reads a VLESS response header (version 0, addons length,
// addons) and discards the addons.
func readResponse(r io.Reader) error {
	var b [255]byte
	if _, err := io.ReadFull(r, b[:2]); err != nil {
		return err
	}
	if b[0] != 0 {
		return fmt.Errorf("response version %d, want 0", b[0])
	}
	if n := int(b[1]); n > 0 {
		if _, err := io.ReadFull(r, b[:n]); err != nil {
			return err
		}
	}
	return nil
}

// appendPacket appends one UDP datagram as framed on a VLESS UDP stream:
// u16 big-endian length, then the payload.
func appendPacket(b, p []byte) ([]byte, error) {
	if len(p) > maxPacket {
		return nil, fmt.Errorf("vless: datagram of %d bytes, at most %d", len(p), maxPacket)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	return append(b, p...), nil
}
