package vless

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/skiffvpn/skiff/core/flow"
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
type UUID [16]byte

// errBadUUID does not repeat the input: a user id is a credential.
var errBadUUID = errors.New("vless: uuid: want a UUID (32 hex digits, dashes optional) or a name of 1-30 characters")

// ParseUUID parses a user id as Xray does: the canonical form
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) or 32 hex digits; any other string
// of 1 to 30 bytes names the UUIDv5 of that string in the nil namespace
// (SHA-1, as Xray's common/uuid and sing-box derive it). Errors never quote s.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	switch l := len(s); {
	case l == 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return u, errBadUUID
		}
		s = s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
		fallthrough
	case l == 32:
		if _, err := hex.Decode(u[:], []byte(s)); err != nil {
			return UUID{}, errBadUUID
		}
		return u, nil
	case l >= 1 && l <= 30:
		h := sha1.New()
		h.Write(u[:]) // the nil namespace
		h.Write([]byte(s))
		copy(u[:], h.Sum(nil))
		u[6] = u[6]&0x0f | 0x50 // version 5
		u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
		return u, nil
	}
	return u, errBadUUID
}

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

// readPacket reads one framed datagram from r into buf, which must hold
// maxPacket bytes, and returns its length.
func readPacket(r io.Reader, hdr *[2]byte, buf []byte) (int, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if n > len(buf) {
		return 0, fmt.Errorf("datagram of %d bytes, buffer holds %d", n, len(buf))
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	return n, nil
}
