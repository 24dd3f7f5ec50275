package mux

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"

	"github.com/skiffvpn/skiff/core/flow"
)

// The wire of sing-box's multiplex (sing-mux), from its description in
// docs/transports.md; no sing-mux code is used (it is GPL).
//
// Session: the outer protocol opens a stream to Destination, which begins
// with version(1) protocol(1) and, for version 1, padding(bool 1) and when
// true len(u16 BE) and that many random bytes. With padding the session's
// first 16 frames each way are padded (padding.go). The multiplexer then
// runs on the rest.
//
// Stream: each multiplexed stream begins with flags(u16 BE) and the
// destination as SOCKS writes it (1 IPv4, 3 name, 4 IPv6) with its port;
// the server answers status(1): 0 ok, 1 error with a uvarint-length message.
// UDP streams (flag 1) carry datagrams framed len(u16 BE).

// Destination is the address the outer protocol's session stream is
// opened to; the server knows it for a multiplex session.
var Destination = flow.NameAddr("sp.mux.sing-box.arpa", 444)

// Protocol codes of the session header.
const (
	codeSmux  = 0
	codeYamux = 1
	codeH2    = 2
)

// Stream flags.
const (
	flagUDP = 1
)

var socksTypes = flow.AddrTypes{IPv4: 1, Name: 3, IPv6: 4}

// sessionHeader is the session's header for protocol code proto. The
// padding (256–767 random bytes, as sing-mux sends) hides the header's
// size.
func sessionHeader(proto byte, padding bool) []byte {
	if !padding {
		return []byte{0, proto}
	}
	n := 256 + mrand.IntN(512)
	b := make([]byte, 5+n)
	b[0], b[1], b[2] = 1, proto, 1
	binary.BigEndian.PutUint16(b[3:], uint16(n))
	rand.Read(b[5:])
	return b
}

// streamRequest appends a stream's request for dst to b.
func streamRequest(b []byte, udp bool, dst flow.Addr) ([]byte, error) {
	var flags uint16
	if udp {
		flags |= flagUDP
	}
	b = binary.BigEndian.AppendUint16(b, flags)
	b, err := dst.AppendHost(b, socksTypes)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint16(b, dst.Port), nil
}

// ErrRefused is wrapped by a stream's error when the server answered its
// request with an error (its message follows).
var ErrRefused = errors.New("mux: the server refused the stream")

// maxMessage bounds a status's error message; the server's are one line.
const maxMessage = 4096

// readStatus reads the server's answer to a stream request.
func readStatus(r io.Reader) error {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("mux: reading the stream's status: %w", err)
	}
	switch b[0] {
	case 0:
		return nil
	case 1:
	default:
		return fmt.Errorf("mux: bad stream status %d", b[0])
	}
	br := byteReader{r: r}
	n, err := binary.ReadUvarint(&br)
	if err != nil {
		return fmt.Errorf("mux: reading the stream's error: %w", err)
	}
	if n > maxMessage {
		return fmt.Errorf("%w (an error message of %d bytes)", ErrRefused, n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return fmt.Errorf("mux: reading the stream's error: %w", err)
	}
	return fmt.Errorf("%w: %q", ErrRefused, msg)
}

// byteReader reads a varint without reading past it.
type byteReader struct{ r io.Reader }

func (b *byteReader) ReadByte() (byte, error) {
	var p [1]byte
	_, err := io.ReadFull(b.r, p[:])
	return p[0], err
}
