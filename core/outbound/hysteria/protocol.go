package hysteria

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Wire constants of Hysteria v1 (apernet/hysteria v1 core/cs/protocol.go).
// Every integer is big-endian.
const (
	protocolVersion = 3

	// maxHostLen bounds a host in a request or UDP message: the length
	// field is 16 bits, a DNS name is at most 253 bytes.
	maxHostLen = 255

	// Fixed parts of the messages, before their variable-length fields.
	serverHelloFixed    = 1 + 8 + 8 + 2 // ok, send and receive rate, message length
	serverResponseFixed = 1 + 4 + 2     // ok, UDP session ID, message length
	// udpHeaderFixed is a UDP message without host and data: session ID
	// (4), host length (2), port (2), message ID (2), fragment ID and
	// count (1 + 1), data length (2).
	udpHeaderFixed = 4 + 2 + 2 + 2 + 1 + 1 + 2

	// QUIC close codes.
	closeCodeOK       = 0
	closeCodeProtocol = 1
	closeCodeAuth     = 2
)

var (
	errHostTooLong  = errors.New("host longer than 255 bytes")
	errAuthTooLong  = errors.New("auth longer than 65535 bytes")
	errShortMessage = errors.New("UDP message truncated")
	errBadFragment  = errors.New("UDP message: fragment ID not below fragment count")
)

// appendClientHello appends the protocol version and the client hello:
// the rates the client sends and receives at, in bytes per second, and
// the auth payload.
func appendClientHello(b []byte, sendBPS, recvBPS uint64, auth []byte) ([]byte, error) {
	if len(auth) > 0xffff {
		return b, errAuthTooLong
	}
	b = append(b, protocolVersion)
	b = binary.BigEndian.AppendUint64(b, sendBPS)
	b = binary.BigEndian.AppendUint64(b, recvBPS)
	b = binary.BigEndian.AppendUint16(b, uint16(len(auth)))
	return append(b, auth...), nil
}

// serverHello is the server's answer to the client hello.
type serverHello struct {
	OK      bool
	SendBPS uint64 // the server's send rate: the client's download
	RecvBPS uint64 // the server's receive rate: the client's upload
	Message string
}

// readServerHello reads the server hello from r.
func readServerHello(r io.Reader) (serverHello, error) {
	var h [serverHelloFixed]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return serverHello{}, fmt.Errorf("read server hello: %w", err)
	}
	sh := serverHello{
		OK:      h[0] != 0,
		SendBPS: binary.BigEndian.Uint64(h[1:9]),
		RecvBPS: binary.BigEndian.Uint64(h[9:17]),
	}
	msg, err := readMessage(r, binary.BigEndian.Uint16(h[17:19]))
	if err != nil {
		return serverHello{}, fmt.Errorf("read server hello: %w", err)
	}
	sh.Message = msg
	return sh, nil
}

// appendClientRequest appends a stream's request: a TCP connection to
// host:port, or (udp) a UDP session, for which the reference client sends
// no host and port 0.
func appendClientRequest(b []byte, udp bool, host string, port uint16) ([]byte, error) {
	if len(host) > maxHostLen {
		return b, errHostTooLong
	}
	if udp {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(host)))
	b = append(b, host...)
	return binary.BigEndian.AppendUint16(b, port), nil
}

// serverResponse is the server's answer to a stream's request.
type serverResponse struct {
	OK        bool
	SessionID uint32 // of a UDP session
	Message   string
}

// readServerResponse reads a request's answer from r.
func readServerResponse(r io.Reader) (serverResponse, error) {
	var h [serverResponseFixed]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return serverResponse{}, err
	}
	sr := serverResponse{OK: h[0] != 0, SessionID: binary.BigEndian.Uint32(h[1:5])}
	msg, err := readMessage(r, binary.BigEndian.Uint16(h[5:7]))
	if err != nil {
		return serverResponse{}, err
	}
	sr.Message = msg
	return sr, nil
}

// readMessage reads a message of n bytes.
func readMessage(r io.Reader, n uint16) (string, error) {
	if n == 0 {
		return "", nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// udpMessage is one QUIC datagram of a UDP session. An unfragmented
// datagram has FragCount 1; the fragments of a larger one share a
// non-zero MsgID and count FragID from 0.
type udpMessage struct {
	SessionID uint32
	Host      []byte // the peer: a name or an IP literal without brackets
	Port      uint16
	MsgID     uint16
	FragID    uint8
	FragCount uint8
	Data      []byte
}

// headerLen is the length of m without its data.
func (m *udpMessage) headerLen() int { return udpHeaderFixed + len(m.Host) }

// appendUDPMessage appends m to b; m.Host must be at most maxHostLen
// bytes and m.Data at most 65535.
func appendUDPMessage(b []byte, m *udpMessage) []byte {
	b = binary.BigEndian.AppendUint32(b, m.SessionID)
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Host)))
	b = append(b, m.Host...)
	b = binary.BigEndian.AppendUint16(b, m.Port)
	b = binary.BigEndian.AppendUint16(b, m.MsgID)
	b = append(b, m.FragID, m.FragCount)
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Data)))
	return append(b, m.Data...)
}

// parseUDPMessage parses a datagram from the server into m, whose Host
// and Data then alias b. Bytes after the data are ignored, as the
// reference does.
func parseUDPMessage(b []byte, m *udpMessage) error {
	if len(b) < udpHeaderFixed {
		return errShortMessage
	}
	m.SessionID = binary.BigEndian.Uint32(b)
	hostLen := int(binary.BigEndian.Uint16(b[4:]))
	b = b[6:]
	if len(b) < hostLen+udpHeaderFixed-6 {
		return errShortMessage
	}
	m.Host = b[:hostLen]
	b = b[hostLen:]
	m.Port = binary.BigEndian.Uint16(b)
	m.MsgID = binary.BigEndian.Uint16(b[2:])
	m.FragID, m.FragCount = b[4], b[5]
	dataLen := int(binary.BigEndian.Uint16(b[6:]))
	b = b[8:]
	if len(b) < dataLen {
		return errShortMessage
	}
	m.Data = b[:dataLen]
	if m.FragCount > 1 && m.FragID >= m.FragCount {
		return errBadFragment
	}
	return nil
}
