package shadowsocks

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// SOCKS5 address types, which Shadowsocks uses for its destinations.
const (
	atypIPv4   byte = 1
	atypDomain byte = 3
	atypIPv6   byte = 4
)

// SIP022 header types and limits.
const (
	typeRequest  byte = 0
	typeResponse byte = 1

	maxPadding     = 900             // SIP022: padding length in [0, 900]
	maxTimeSkew    = 30              // seconds a header's timestamp may be off
	fixedReqLen    = 1 + 8 + 2       // type, timestamp, length of the variable header
	maxPayload2022 = 0xffff          // a 2022 chunk's payload
	maxPayloadAEAD = 0x3fff          // a classic AEAD chunk's payload
	tagLen         = 16              // the AEAD tag of every method
	udpHeaderLen   = 16              // 2022 UDP separate header: session id, packet id
	xnonceLen      = 24              // XChaCha20-Poly1305 nonce
	maxAddrLen     = 1 + 1 + 255 + 2 // SOCKS address with the longest name
)

// addrTypes are SOCKS5's address types, which Shadowsocks uses.
var addrTypes = flow.AddrTypes{IPv4: atypIPv4, Name: atypDomain, IPv6: atypIPv6}

// appendAddr appends dst as a SOCKS5 address: type, address, port.
func appendAddr(b []byte, dst flow.Addr) ([]byte, error) {
	b, err := dst.AppendHost(b, addrTypes)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint16(b, dst.Port), nil
}

var errShortAddr = flow.ErrShortAddr

// parseAddr reads a SOCKS5 address from the front of b and returns it with
// its length.
func parseAddr(b []byte) (flow.Addr, int, error) {
	return flow.ParseHostPort(b, addrTypes)
}

// appendFixedRequest appends the plaintext of a 2022 TCP request's
// fixed-length header: type 0, timestamp, length of the variable header.
func appendFixedRequest(b []byte, now time.Time, varLen int) []byte {
	b = append(b, typeRequest)
	b = binary.BigEndian.AppendUint64(b, uint64(now.Unix()))
	return binary.BigEndian.AppendUint16(b, uint16(varLen))
}

// checkTime fails when a header's timestamp is more than maxTimeSkew
// seconds from now: the replay protection of SIP022.
func checkTime(ts uint64, now time.Time) error {
	d := int64(ts) - now.Unix()
	if d > maxTimeSkew || d < -maxTimeSkew {
		return fmt.Errorf("timestamp %ds off the local clock (at most %ds): a replay, or a clock out of sync", d, maxTimeSkew)
	}
	return nil
}

// parseFixedResponse checks the plaintext of a 2022 TCP response's
// fixed-length header (type 1, timestamp, the request's salt, length of the
// first chunk) and returns that length.
func parseFixedResponse(b, reqSalt []byte, now time.Time) (int, error) {
	if len(b) != 1+8+len(reqSalt)+2 {
		return 0, fmt.Errorf("response header of %d bytes, want %d", len(b), 1+8+len(reqSalt)+2)
	}
	if b[0] != typeResponse {
		return 0, fmt.Errorf("response header type %d, want %d", b[0], typeResponse)
	}
	if err := checkTime(binary.BigEndian.Uint64(b[1:9]), now); err != nil {
		return 0, err
	}
	if string(b[9:9+len(reqSalt)]) != string(reqSalt) {
		return 0, errors.New("response does not echo the request salt")
	}
	n := int(binary.BigEndian.Uint16(b[9+len(reqSalt):]))
	if n == 0 {
		return 0, errors.New("response header announces an empty first chunk")
	}
	return n, nil
}

// appendUDPRequestBody appends the plaintext main header of a 2022 UDP
// request, up to the payload: type 0, timestamp, padding, destination.
func appendUDPRequestBody(b []byte, now time.Time, dst flow.Addr) ([]byte, error) {
	b = append(b, typeRequest)
	b = binary.BigEndian.AppendUint64(b, uint64(now.Unix()))
	b = append(b, 0, 0) // no padding: the datagram's own size is the app's
	return appendAddr(b, dst)
}

// parseUDPResponseBody checks the plaintext of a 2022 UDP response (type 1,
// timestamp, our session id, padding, source address) and returns the
// source and where the payload starts.
func parseUDPResponseBody(b []byte, clientSession []byte, now time.Time) (flow.Addr, int, error) {
	const fixed = 1 + 8 + 8 + 2
	if len(b) < fixed {
		return flow.Addr{}, 0, fmt.Errorf("response of %d bytes, shorter than its header", len(b))
	}
	if b[0] != typeResponse {
		return flow.Addr{}, 0, fmt.Errorf("response type %d, want %d", b[0], typeResponse)
	}
	if err := checkTime(binary.BigEndian.Uint64(b[1:9]), now); err != nil {
		return flow.Addr{}, 0, err
	}
	if string(b[9:17]) != string(clientSession) {
		return flow.Addr{}, 0, errors.New("response for another session")
	}
	pad := int(binary.BigEndian.Uint16(b[17:19]))
	if pad > len(b)-fixed {
		return flow.Addr{}, 0, errors.New("padding longer than the packet")
	}
	off := fixed + pad
	src, n, err := parseAddr(b[off:])
	if err != nil {
		return flow.Addr{}, 0, err
	}
	return src, off + n, nil
}
