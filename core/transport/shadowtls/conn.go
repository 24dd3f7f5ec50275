package shadowtls

import (
	"crypto/hmac"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"sync"
)

// Errors of the data phase.
var (
	errBadMAC = errors.New("shadowtls: a record's tag does not match (tampered, or not from the server)")
	errRecord = errors.New("shadowtls: unexpected record")
)

// Conn is a connection after the switch: each Write goes out as records
// tagged by the client's MAC, each Read returns the data of records whose
// tag the server's MAC checks.
type Conn struct {
	net.Conn // the TCP connection

	rd records // opened by in
	in *reader

	wmu  sync.Mutex
	out  hash.Hash // client to server: seeded ServerRandom+"C"
	hdr  [recordHeader + tagSize]byte
	wsum [sha1.Size]byte
}

// reader checks the server's records: its data records by the "S" MAC,
// and, until the first of those, the site's records still in flight by
// the handshake's MAC, to drop them.
type reader struct {
	in  hash.Hash // seeded ServerRandom+"S"
	hs  hash.Hash // the handshake's; nil once the server's data began
	sum [sha1.Size]byte
}

func newReader(password, random []byte, hs hash.Hash) *reader {
	return &reader{in: newMAC(password, random, []byte("S")), hs: hs}
}

func newConn(raw net.Conn, password, random []byte, hs hash.Hash) *Conn {
	return &Conn{Conn: raw, in: newReader(password, random, hs), out: newMAC(password, random, []byte("C"))}
}

// open returns the data a record carries: nil for a record to drop, and
// io.EOF for an alert, by which the server ends its direction.
func (r *reader) open(rec []byte) ([]byte, error) {
	if len(rec) < recordHeader {
		return nil, errRecord
	}
	switch rec[0] {
	case typeAlert:
		return nil, io.EOF
	case typeApplicationData:
	default:
		return nil, fmt.Errorf("%w of type %d", errRecord, rec[0])
	}
	body := rec[recordHeader:]
	if len(body) < tagSize {
		return nil, errBadMAC
	}
	tag, data := body[:tagSize], body[tagSize:]
	if r.hs != nil {
		// The first data record, or one of the site's: try the data MAC
		// on a copy, so that a site's record leaves it as it was.
		c, err := r.in.(hash.Cloner).Clone()
		if err != nil {
			return nil, err
		}
		m := c.(hash.Hash)
		if check(m, data, tag, r.sum[:0]) {
			r.in, r.hs = m, nil
			return data, nil
		}
		r.hs.Write(data)
		if hmac.Equal(r.hs.Sum(r.sum[:0])[:tagSize], tag) {
			return nil, nil // the site's, still in flight: dropped
		}
		return nil, errBadMAC
	}
	if !check(r.in, data, tag, r.sum[:0]) {
		return nil, errBadMAC
	}
	return data, nil
}

// check feeds m the data, compares its tag, and feeds it the tag.
func check(m hash.Hash, data, tag, scratch []byte) bool {
	m.Write(data)
	sum := m.Sum(scratch)[:tagSize]
	ok := hmac.Equal(sum, tag)
	m.Write(sum)
	return ok
}

// Read returns data of the server's records.
func (c *Conn) Read(p []byte) (int, error) { return c.rd.read(c.Conn, p, c.in.open) }

// records hands out the data of the records read from a connection, as an
// open function finds it in each (nil: a record to drop); open's error,
// or the connection's, ends the stream.
type records struct {
	mu   sync.Mutex
	rbuf []byte // the current record
	data []byte // its data not yet read
	err  error
}

func (r *records) read(conn io.Reader, p []byte, open func(rec []byte) ([]byte, error)) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.data) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		rec, err := readRecord(conn, r.rbuf[:0])
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				err = fmt.Errorf("shadowtls: connection ended inside a record: %w", err)
			}
			r.err = err
			continue
		}
		r.rbuf = rec
		r.data, r.err = open(rec)
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// closeWrite ends the sending half of conn, a TCP connection.
func closeWrite(conn net.Conn) error {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Write sends p as records of at most maxData bytes each.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), maxData)]
		c.hdr[0], c.hdr[1], c.hdr[2] = typeApplicationData, 3, 3
		putLength(c.hdr[:], tagSize+len(chunk))
		c.out.Write(chunk)
		tag := c.out.Sum(c.wsum[:0])[:tagSize]
		c.out.Write(tag)
		copy(c.hdr[recordHeader:], tag)
		bufs := net.Buffers{c.hdr[:], chunk}
		if _, err := bufs.WriteTo(c.Conn); err != nil {
			return written, err
		}
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

// CloseWrite ends the sending half of the TCP connection.
func (c *Conn) CloseWrite() error { return closeWrite(c.Conn) }
