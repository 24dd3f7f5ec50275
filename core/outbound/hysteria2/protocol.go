package hysteria2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"

	"github.com/quic-go/quic-go/quicvarint"

	"github.com/skiffvpn/skiff/core/outbound/internal/eof"
)

// Wire constants from the Hysteria 2 protocol specification (PROTOCOL.md).
const (
	tcpRequestID = 0x401 // varint that opens every TCP request stream

	statusAuthOK = 233 // HTTP status of a successful authentication

	maxAddressLen = 2048 // longest "host:port" in a TCP request or UDP message
	maxMessageLen = 2048 // longest TCP response message
	maxPaddingLen = 4096 // longest padding in a TCP request or response

	// Padding we send: the reference client pads TCP requests with 64-511
	// bytes and the auth request with 256-2047 characters.
	tcpPaddingMin  = 64
	tcpPaddingMax  = 512
	authPaddingMin = 256
	authPaddingMax = 2048

	// udpHeaderFixed is the UDP message header before the address:
	// session ID (4), packet ID (2), fragment ID (1), fragment count (1).
	udpHeaderFixed = 8
)

// Header names of the authentication request and response.
const (
	headerAuth    = "Hysteria-Auth"
	headerCCRX    = "Hysteria-CC-RX"
	headerPadding = "Hysteria-Padding"
	headerUDP     = "Hysteria-UDP"
)

var (
	errAddressTooLong = errors.New("address longer than 2048 bytes")
	errMessageTooLong = errors.New("message longer than 2048 bytes")
	errPaddingTooLong = errors.New("padding longer than 4096 bytes")
	errBadRequestID   = errors.New("not a TCP request")
	errShortMessage   = errors.New("UDP message truncated")
	errBadFragment    = errors.New("UDP message: fragment ID not below fragment count")
)

const paddingChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// appendPadding appends n random characters to b. The padding only hides
// message lengths, so a fast non-cryptographic generator is enough.
func appendPadding(b []byte, n int) []byte {
	for range n {
		b = append(b, paddingChars[rand.IntN(len(paddingChars))])
	}
	return b
}

// appendTCPRequest appends the TCP request for addr ("host:port") with
// padLen bytes of padding to b.
func appendTCPRequest(b []byte, addr string, padLen int) ([]byte, error) {
	if len(addr) > maxAddressLen {
		return b, errAddressTooLong
	}
	if padLen > maxPaddingLen {
		return b, errPaddingTooLong
	}
	b = quicvarint.Append(b, tcpRequestID)
	b = quicvarint.Append(b, uint64(len(addr)))
	b = append(b, addr...)
	b = quicvarint.Append(b, uint64(padLen))
	return appendPadding(b, padLen), nil
}

// readTCPRequest reads a TCP request and returns its address. The client
// never reads one; it is here for the tests and the fuzzer, which check
// that what appendTCPRequest writes is what a server reads.
func readTCPRequest(r io.Reader) (string, error) {
	br := byteReader{r: r}
	id, err := quicvarint.Read(&br)
	if err != nil {
		return "", err
	}
	if id != tcpRequestID {
		return "", errBadRequestID
	}
	addr, err := readField(&br, maxAddressLen, errAddressTooLong)
	if err != nil {
		return "", err
	}
	if err := skipPadding(&br); err != nil {
		return "", err
	}
	return string(addr), nil
}

// appendTCPResponse appends a TCP response; the client never sends one
// (tests and fuzzing use it).
func appendTCPResponse(b []byte, ok bool, msg string, padLen int) ([]byte, error) {
	if len(msg) > maxMessageLen {
		return b, errMessageTooLong
	}
	if padLen > maxPaddingLen {
		return b, errPaddingTooLong
	}
	status := byte(1)
	if ok {
		status = 0
	}
	b = append(b, status)
	b = quicvarint.Append(b, uint64(len(msg)))
	b = append(b, msg...)
	b = quicvarint.Append(b, uint64(padLen))
	return appendPadding(b, padLen), nil
}

// readTCPResponse reads a TCP response from r and returns whether the
// server accepted the stream and its message. It reads exactly the
// response, nothing of the data after it.
func readTCPResponse(r io.Reader) (ok bool, msg string, err error) {
	br := byteReader{r: r}
	status, err := br.ReadByte()
	if err != nil {
		return false, "", err
	}
	m, err := readField(&br, maxMessageLen, errMessageTooLong)
	if err != nil {
		return false, "", err
	}
	if err := skipPadding(&br); err != nil {
		return false, "", err
	}
	return status == 0, string(m), nil
}

// readField reads a varint length (at most limit) and that many bytes.
func readField(br *byteReader, limit int, tooLong error) ([]byte, error) {
	n, err := quicvarint.Read(br)
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, tooLong
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br.r, b); err != nil {
		return nil, eof.Unexpected(err)
	}
	return b, nil
}

// skipPadding reads a varint padding length and discards the padding.
func skipPadding(br *byteReader) error {
	n, err := quicvarint.Read(br)
	if err != nil {
		return eof.Unexpected(err)
	}
	if n > maxPaddingLen {
		return errPaddingTooLong
	}
	if n == 0 {
		return nil
	}
	if _, err := io.CopyN(io.Discard, br.r, int64(n)); err != nil {
		return eof.Unexpected(err)
	}
	return nil
}

// byteReader reads one byte at a time so that a varint can be read from a
// stream without reading past it (a bufio.Reader would swallow the data
// that follows the TCP response).
type byteReader struct {
	r io.Reader
	b [1]byte
}

func (br *byteReader) ReadByte() (byte, error) {
	if _, err := io.ReadFull(br.r, br.b[:]); err != nil {
		return 0, err
	}
	return br.b[0], nil
}

// udpMessage is one UDP message (a datagram or a fragment of one). Addr
// and Payload alias the buffer it was parsed from.
type udpMessage struct {
	SessionID uint32
	PacketID  uint16
	FragID    uint8
	FragCount uint8
	Addr      []byte // "host:port"
	Payload   []byte
}

// headerLen is the encoded length of m without the payload.
func (m *udpMessage) headerLen() int {
	return udpHeaderFixed + quicvarint.Len(uint64(len(m.Addr))) + len(m.Addr)
}

// appendUDPMessage appends m's encoding to b.
func appendUDPMessage(b []byte, m *udpMessage) []byte {
	b = binary.BigEndian.AppendUint32(b, m.SessionID)
	b = binary.BigEndian.AppendUint16(b, m.PacketID)
	b = append(b, m.FragID, m.FragCount)
	b = quicvarint.Append(b, uint64(len(m.Addr)))
	b = append(b, m.Addr...)
	return append(b, m.Payload...)
}

// parseUDPMessage parses b into m. m's Addr and Payload alias b.
func parseUDPMessage(b []byte, m *udpMessage) error {
	if len(b) < udpHeaderFixed+1 {
		return errShortMessage
	}
	m.SessionID = binary.BigEndian.Uint32(b)
	m.PacketID = binary.BigEndian.Uint16(b[4:])
	m.FragID = b[6]
	m.FragCount = b[7]
	if m.FragID >= m.FragCount {
		return errBadFragment
	}
	n, l, err := quicvarint.Parse(b[udpHeaderFixed:])
	if err != nil {
		return errShortMessage
	}
	if n > maxAddressLen {
		return errAddressTooLong
	}
	rest := b[udpHeaderFixed+l:]
	if uint64(len(rest)) < n {
		return errShortMessage
	}
	m.Addr = rest[:n:n]
	m.Payload = rest[n:]
	return nil
}

// authHeader fills the authentication request's headers.
func authHeader(h http.Header, auth string, rxBytesPerSec uint64) {
	h.Set(headerAuth, auth)
	h.Set(headerCCRX, strconv.FormatUint(rxBytesPerSec, 10))
	pad := appendPadding(nil, authPaddingMin+rand.IntN(authPaddingMax-authPaddingMin))
	h.Set(headerPadding, string(pad))
}

// authResult is what the server said in a successful authentication.
type authResult struct {
	UDP    bool   // the server relays UDP
	RxAuto bool   // the server asks the client to find its rate itself
	Rx     uint64 // the server's receive rate, bytes/s; 0: unlimited
}

// parseAuthResponse reads the headers of a status-233 response.
func parseAuthResponse(h http.Header) (authResult, error) {
	var r authResult
	r.UDP, _ = strconv.ParseBool(h.Get(headerUDP))
	switch v := h.Get(headerCCRX); v {
	case "auto":
		r.RxAuto = true
	case "":
	default:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("bad %s header", headerCCRX)
		}
		r.Rx = n
	}
	return r, nil
}
