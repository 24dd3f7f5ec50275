package grpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A message is the 5-byte gRPC prefix (flag, big-endian length) and a
// protobuf Hunk or MultiHunk: field 1, bytes, once or repeated.
const (
	prefixLen = 5
	tagData   = 1<<3 | 2 // field 1, wire type 2 (length-delimited)
)

// maxChunk is the payload of one written message. 32 KiB keeps each
// message far below every server's limit (grpc-go's 4 MiB) while the
// header costs 0.03%; the HTTP/2 layer splits it into frames anyway.
const maxChunk = 32 << 10

// appendHeader appends the header of a message carrying n bytes of data
// in one field 1.
func appendHeader(b []byte, n int) []byte {
	body := 1 + uvarintLen(uint64(n)) + n
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(body))
	b = append(b, tagData)
	return binary.AppendUvarint(b, uint64(n))
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// Errors of a message stream that breaks the framing.
var (
	ErrCompressed = errors.New("grpc: compressed message (no encoding was offered)")
	ErrFraming    = errors.New("grpc: malformed message")
)

// reader reads the data of a stream of messages from r without buffering
// any: field 1's bytes go straight into the caller's buffer, other fields
// are skipped.
type reader struct {
	r    io.Reader
	msg  uint64 // bytes left in the current message
	data uint64 // bytes left in the current field 1
	hdr  [prefixLen]byte
	one  [8]byte
}

func (d *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if d.data > 0 {
			n, err := d.r.Read(p[:min(uint64(len(p)), d.data)])
			d.data -= uint64(n)
			d.msg -= uint64(n)
			if err == io.EOF {
				err = nil
				if n == 0 {
					err = fmt.Errorf("%w: stream ended inside a message", ErrFraming)
				}
			}
			return n, err
		}
		if d.msg == 0 {
			if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
				if err == io.ErrUnexpectedEOF {
					err = fmt.Errorf("%w: stream ended inside a message prefix", ErrFraming)
				}
				return 0, err // io.EOF at a message boundary: the clean end
			}
			switch d.hdr[0] {
			case 0:
			case 1:
				return 0, ErrCompressed
			default:
				return 0, fmt.Errorf("%w: flag byte %#x", ErrFraming, d.hdr[0])
			}
			d.msg = uint64(binary.BigEndian.Uint32(d.hdr[1:]))
			continue
		}
		tag, err := d.uvarint()
		if err != nil {
			return 0, err
		}
		if tag>>3 == 0 {
			return 0, fmt.Errorf("%w: field number 0", ErrFraming)
		}
		switch tag & 7 {
		case 0:
			_, err = d.uvarint()
		case 1:
			err = d.skip(8)
		case 2:
			var n uint64
			if n, err = d.uvarint(); err == nil {
				if n > d.msg {
					return 0, fmt.Errorf("%w: field of %d bytes in %d left of the message", ErrFraming, n, d.msg)
				}
				if tag == tagData {
					d.data = n
				} else {
					err = d.skip(n)
				}
			}
		case 5:
			err = d.skip(4)
		default:
			return 0, fmt.Errorf("%w: wire type %d", ErrFraming, tag&7)
		}
		if err != nil {
			return 0, err
		}
	}
}

// byte reads one byte of the current message.
func (d *reader) byte() (byte, error) {
	if d.msg == 0 {
		return 0, fmt.Errorf("%w: message ends inside a field", ErrFraming)
	}
	if _, err := io.ReadFull(d.r, d.one[:1]); err != nil {
		return 0, d.short(err)
	}
	d.msg--
	return d.one[0], nil
}

func (d *reader) uvarint() (uint64, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := d.byte()
		if err != nil {
			return 0, err
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x, nil
		}
	}
	return 0, fmt.Errorf("%w: varint too long", ErrFraming)
}

// skip discards n bytes of the current message.
func (d *reader) skip(n uint64) error {
	if n > d.msg {
		return fmt.Errorf("%w: message ends inside a field", ErrFraming)
	}
	for n > 0 {
		k := min(n, uint64(len(d.one)))
		if _, err := io.ReadFull(d.r, d.one[:k]); err != nil {
			return d.short(err)
		}
		n -= k
		d.msg -= k
	}
	return nil
}

// short turns the end of the stream inside a message into a framing error.
func (d *reader) short(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: stream ended inside a message", ErrFraming)
	}
	return err
}
