package shadowsocks

import (
	"encoding/binary"
	"io"
	"net"
	"sync"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/muxcool"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// A v2ray-plugin server always expects Mux.Cool frames (package muxcool)
// on its WebSocket. Skiff carries one stream per WebSocket, as
// sub-connection muxSession.
const muxSession = 1

// maxMuxMeta bounds the metadata of a frame read.
const maxMuxMeta = 512

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

// appendMuxMeta appends a frame's metadata length and metadata; a New
// frame names the target.
func appendMuxMeta(b []byte, status, opt byte, target flow.Addr) ([]byte, error) {
	m := muxcool.Meta{Session: muxSession, Status: status, Opt: opt}
	if status == muxcool.StatusNew {
		m.Net, m.Addr = muxcool.NetTCP, target
	}
	return muxcool.AppendMeta(b, m)
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
		status := muxcool.StatusKeep
		if !m.started {
			status = muxcool.StatusNew
		}
		b, err := appendMuxMeta((*bp)[:0], status, muxcool.OptData, m.target)
		if err != nil {
			return done, err
		}
		n := min(len(p), muxcool.MaxData, bufSize-len(b)-2)
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
	var meta [maxMuxMeta]byte
	h, err := muxcool.ReadMeta(m.Conn, meta[:])
	if err != nil {
		return err
	}
	n := 0
	if h.Opt&muxcool.OptData != 0 {
		if n, err = muxcool.ReadDataLen(m.Conn); err != nil {
			return err
		}
	}
	mine := h.Session == muxSession && (h.Status == muxcool.StatusKeep || h.Status == muxcool.StatusNew)
	if !mine && n > 0 {
		if _, err := muxcool.ReadData(m.Conn, nil, n); err != nil {
			return err
		}
		n = 0
	}
	if h.Session == muxSession && h.Status == muxcool.StatusEnd {
		m.done = true
	}
	m.rem = n
	return nil
}

// Close sends End for the sub-connection and closes the transport.
func (m *muxConn) Close() error {
	m.wmu.Lock()
	if m.started && !m.ended {
		m.ended = true
		if b, err := appendMuxMeta(make([]byte, 0, 8), muxcool.StatusEnd, 0, m.target); err == nil {
			m.Conn.Write(b)
		}
	}
	m.wmu.Unlock()
	return m.Conn.Close()
}
