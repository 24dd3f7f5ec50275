package mux

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	mrand "math/rand/v2"
	"net"
	"sync"

	"github.com/skiffvpn/skiff/core/outbound/internal/eof"
)

// paddedFrames is how many frames each way are padded, as sing-mux pads:
// the first writes, whose sizes give a session's handshake away.
const paddedFrames = 16

// maxFrameData is the most data one padded frame carries (a u16 length).
const maxFrameData = 0xffff

// paddingConn frames the first paddedFrames writes and reads of a session
// as dataLen(u16 BE) padLen(u16 BE) data padding, and is transparent
// after them. The multiplexers read from one goroutine; writes are
// serialized here.
type paddingConn struct {
	net.Conn

	// reading
	rframes  int // frames read
	dataLeft int // of the current frame
	padLeft  int
	hdr      [4]byte

	wmu     sync.Mutex
	wframes int // frames written
}

func newPaddingConn(c net.Conn) *paddingConn { return &paddingConn{Conn: c} }

func (c *paddingConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if c.dataLeft > 0 {
			n, err := c.Conn.Read(p[:min(len(p), c.dataLeft)])
			c.dataLeft -= n
			if err == io.EOF && c.dataLeft > 0 {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		if c.padLeft > 0 {
			if _, err := io.CopyN(io.Discard, c.Conn, int64(c.padLeft)); err != nil {
				return 0, eof.Unexpected(err)
			}
			c.padLeft = 0
		}
		if c.rframes >= paddedFrames {
			return c.Conn.Read(p)
		}
		if _, err := io.ReadFull(c.Conn, c.hdr[:]); err != nil {
			return 0, err // io.EOF between frames: the session ended cleanly
		}
		c.rframes++
		c.dataLeft = int(binary.BigEndian.Uint16(c.hdr[:]))
		c.padLeft = int(binary.BigEndian.Uint16(c.hdr[2:]))
	}
}

func (c *paddingConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := 0
	for c.wframes < paddedFrames && len(p) > 0 {
		d := p[:min(len(p), maxFrameData)]
		pad := mrand.IntN(256)
		f := make([]byte, 4+len(d)+pad)
		binary.BigEndian.PutUint16(f, uint16(len(d)))
		binary.BigEndian.PutUint16(f[2:], uint16(pad))
		copy(f[4:], d)
		rand.Read(f[4+len(d):])
		if _, err := c.Conn.Write(f); err != nil {
			return n, err
		}
		c.wframes++
		n += len(d)
		p = p[len(d):]
	}
	if len(p) == 0 {
		return n, nil
	}
	m, err := c.Conn.Write(p)
	return n + m, err
}
