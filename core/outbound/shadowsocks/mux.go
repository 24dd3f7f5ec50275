package shadowsocks

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// Mux.Cool (v2ray's multiplexing, which a v2ray-plugin server always
// expects on its WebSocket): frames of u16 metadata length | metadata (u16
// session id, status, option[, network, port, address type, address]) |
// [u16 data length | data] when option has muxOptData. Skiff carries one
// stream per WebSocket, as sub-connection 1.
const (
	muxNew       byte = 1
	muxKeep      byte = 2
	muxEnd       byte = 3
	muxKeepAlive byte = 4
	muxOptData   byte = 1
	muxNetTCP    byte = 1
	muxSession        = 1
	muxMaxData        = 0xffff
)

// muxConn is one Mux.Cool sub-connection alone on its transport.
type muxConn struct {
	net.Conn
	target flow.Addr

	wmu     sync.Mutex
	started bool
	ended   bool

	framed      // the current frame's data, on c
	done   bool // under rmu
}

func newMuxConn(c net.Conn, target flow.Addr) *muxConn {
	return &muxConn{Conn: c, target: target, framed: framedOn(c)}
}

// ReadWaiters offers WaitRead and TryRead where the transport has them
// (readwait.Wrapper).
func (m *muxConn) ReadWaiters() (readwait.Waiter, readwait.TryReader) {
	return m.waiters.offer(m, m)
}

// appendMuxMeta appends a frame's metadata length and metadata.
func appendMuxMeta(b []byte, status, opt byte, target flow.Addr) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, muxSession)
	b = append(b, status, opt)
	if status == muxNew {
		b = append(b, muxNetTCP)
		b = binary.BigEndian.AppendUint16(b, target.Port)
		switch {
		case target.IP.Is4():
			a := target.IP.As4()
			b = append(b, 1)
			b = append(b, a[:]...)
		case target.IP.Is6():
			a := target.IP.As16()
			b = append(b, 3)
			b = append(b, a[:]...)
		case target.Name != "" && len(target.Name) <= 255:
			b = append(b, 2, byte(len(target.Name)))
			b = append(b, target.Name...)
		default:
			return nil, errors.New("mux: bad target address")
		}
	}
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start-2))
	return b, nil
}

// Write sends p in Keep frames (the first one New), each frame in one
// write to the transport.
func (m *muxConn) Write(p []byte) (int, error) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	bp := getBuf()
	defer putBuf(bp)
	done := 0
	for len(p) > 0 || !m.started {
		status := muxKeep
		if !m.started {
			status = muxNew
		}
		b, err := appendMuxMeta((*bp)[:0], status, muxOptData, m.target)
		if err != nil {
			return done, err
		}
		n := min(len(p), muxMaxData, bufSize-len(b)-2)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
		b = append(b, p[:n]...)
		if _, err := m.Conn.Write(b); err != nil {
			return done, err
		}
		m.started = true
		p = p[n:]
		done += n
	}
	return done, nil
}

// Read returns the data of the sub-connection's frames; an End frame is
// EOF.
func (m *muxConn) Read(p []byte) (int, error) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	for m.rem == 0 {
		if m.done {
			return 0, io.EOF
		}
		if err := m.readFrameHeader(); err != nil {
			return 0, err
		}
	}
	return m.readPayload(m.Conn, p)
}

// readFrameHeader reads the next frame's metadata and data length,
// skipping the data of frames that are not for the sub-connection.
func (m *muxConn) readFrameHeader() error {
	var b [2 + 512]byte
	if _, err := io.ReadFull(m.Conn, b[:2]); err != nil {
		return err
	}
	l := int(binary.BigEndian.Uint16(b[:2]))
	if l < 4 || l > 512 {
		return fmt.Errorf("mux: metadata of %d bytes", l)
	}
	meta := b[2 : 2+l]
	if _, err := io.ReadFull(m.Conn, meta); err != nil {
		return noEOF(err)
	}
	id, status, opt := binary.BigEndian.Uint16(meta), meta[2], meta[3]
	n := 0
	if opt&muxOptData != 0 {
		if _, err := io.ReadFull(m.Conn, b[:2]); err != nil {
			return noEOF(err)
		}
		n = int(binary.BigEndian.Uint16(b[:2]))
	}
	mine := id == muxSession && (status == muxKeep || status == muxNew)
	if !mine && n > 0 {
		if _, err := io.CopyN(io.Discard, m.Conn, int64(n)); err != nil {
			return noEOF(err)
		}
		n = 0
	}
	if id == muxSession && status == muxEnd {
		m.done = true
	}
	m.rem = n
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Close sends End for the sub-connection and closes the transport.
func (m *muxConn) Close() error {
	m.wmu.Lock()
	if m.started && !m.ended {
		m.ended = true
		if b, err := appendMuxMeta(make([]byte, 0, 8), muxEnd, 0, m.target); err == nil {
			m.Conn.Write(b)
		}
	}
	m.wmu.Unlock()
	return m.Conn.Close()
}
