package udpstreams

import (
	"encoding/binary"
	"fmt"
	"io"
)

// ReadFramed reads one datagram framed as VLESS's and sing-mux's UDP
// streams frame them, a u16 big-endian length and the payload, from r
// into p. hdr is the caller's room for the length, so that nothing
// escapes. io.EOF means r ended between datagrams; one that ends inside a
// datagram gives io.ErrUnexpectedEOF.
func ReadFramed(r io.Reader, hdr *[2]byte, p []byte) (int, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if n > len(p) {
		return 0, fmt.Errorf("datagram of %d bytes, buffer holds %d", n, len(p))
	}
	if _, err := io.ReadFull(r, p[:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	return n, nil
}
