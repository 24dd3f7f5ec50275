package shadowsocks

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/outbound/internal/eof"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// obfsTLSConn is simple-obfs's tls mode: the stream starts as a TLS 1.2
// ClientHello whose session ticket extension carries the first payload;
// later writes go in application data records. The server answers as a
// resumed session would: ServerHello, ChangeCipherSpec, then a
// Finished-looking handshake record that carries its first payload, and
// application data records after that.
type obfsTLSConn struct {
	net.Conn
	host string // SNI

	wmu   sync.Mutex
	hello bool // the ClientHello went out

	framed      // the current record's payload, on c
	ccs    bool // under rmu: the server's ChangeCipherSpec came, handshake records carry data
}

// Records of the disguise.
const (
	recHandshake  = 0x16
	recCCS        = 0x14
	recAppData    = 0x17
	maxRecordData = 16 << 10
)

func newObfsTLSConn(c net.Conn, host string) *obfsTLSConn {
	return &obfsTLSConn{Conn: c, host: host, framed: framedOn(c)}
}

// clientHello builds the ClientHello record carrying payload.
func (o *obfsTLSConn) clientHello(payload []byte) []byte {
	var random, session [32]byte
	rand.Read(random[:])
	binary.BigEndian.PutUint32(random[:], uint32(time.Now().Unix()))
	rand.Read(session[:])

	var ext []byte
	ext = binary.BigEndian.AppendUint16(ext, 0x0023) // session ticket
	ext = binary.BigEndian.AppendUint16(ext, uint16(len(payload)))
	ext = append(ext, payload...)
	host := []byte(o.host)
	ext = binary.BigEndian.AppendUint16(ext, 0x0000) // server name
	ext = binary.BigEndian.AppendUint16(ext, uint16(len(host)+5))
	ext = binary.BigEndian.AppendUint16(ext, uint16(len(host)+3))
	ext = append(ext, 0)
	ext = binary.BigEndian.AppendUint16(ext, uint16(len(host)))
	ext = append(ext, host...)
	ext = append(ext, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02)                                     // ec_point_formats
	ext = append(ext, 0x00, 0x0a, 0x00, 0x0a, 0x00, 0x08, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x19, 0x00, 0x18) // supported groups
	ext = append(ext, 0x00, 0x0d, 0x00, 0x20, 0x00, 0x1e,                                                 // signature algorithms
		0x06, 0x01, 0x06, 0x02, 0x06, 0x03, 0x05, 0x01, 0x05, 0x02, 0x05, 0x03, 0x04, 0x01, 0x04, 0x02,
		0x04, 0x03, 0x03, 0x01, 0x03, 0x02, 0x03, 0x03, 0x02, 0x01, 0x02, 0x02, 0x02, 0x03)
	ext = append(ext, 0x00, 0x16, 0x00, 0x00) // encrypt then mac
	ext = append(ext, 0x00, 0x17, 0x00, 0x00) // extended master secret

	// 28 cipher suites (56 bytes), as the plugin's own hello has.
	suites := []uint16{0xc02c, 0xc030, 0x009f, 0xcca9, 0xcca8, 0xccaa, 0xc02b, 0xc02f, 0x009e, 0xc024,
		0xc028, 0x006b, 0xc023, 0xc027, 0x0067, 0xc00a, 0xc014, 0x0039, 0xc009, 0xc013, 0x0033, 0x009d,
		0x009c, 0x003d, 0x003c, 0x0035, 0x002f, 0x00ff}
	var hs []byte
	hs = append(hs, 0x03, 0x03)
	hs = append(hs, random[:]...)
	hs = append(hs, 32)
	hs = append(hs, session[:]...)
	hs = binary.BigEndian.AppendUint16(hs, uint16(2*len(suites)))
	for _, s := range suites {
		hs = binary.BigEndian.AppendUint16(hs, s)
	}
	hs = append(hs, 1, 0) // compression: null
	hs = binary.BigEndian.AppendUint16(hs, uint16(len(ext)))
	hs = append(hs, ext...)

	rec := []byte{recHandshake, 0x03, 0x01}
	rec = binary.BigEndian.AppendUint16(rec, uint16(4+len(hs)))
	rec = append(rec, 0x01, byte(len(hs)>>16), byte(len(hs)>>8), byte(len(hs)))
	return append(rec, hs...)
}

// Write sends p in the ClientHello the first time, then in application
// data records.
func (o *obfsTLSConn) Write(p []byte) (int, error) {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	if !o.hello {
		n := min(len(p), maxRecordData)
		o.hello = true
		if _, err := o.Conn.Write(o.clientHello(p[:n])); err != nil {
			return 0, err
		}
		if n == len(p) {
			return n, nil
		}
		m, err := o.Write(p[n:])
		return n + m, err
	}
	bp := getBuf()
	defer putBuf(bp)
	done := 0
	for len(p) > 0 {
		b := (*bp)[:0]
		for len(p) > 0 && bufSize-len(b) > 5+1 {
			n := min(len(p), maxRecordData, bufSize-len(b)-5)
			b = append(b, recAppData, 0x03, 0x03, byte(n>>8), byte(n))
			b = append(b, p[:n]...)
			p = p[n:]
			done += n
		}
		if _, err := o.Conn.Write(b); err != nil {
			return 0, err
		}
	}
	return done, nil
}

// Read returns the payload of the server's application data records.
func (o *obfsTLSConn) Read(p []byte) (int, error) {
	o.rmu.Lock()
	defer o.rmu.Unlock()
	for o.rem == 0 {
		var h [5]byte
		if _, err := io.ReadFull(o.Conn, h[:]); err != nil {
			return 0, err
		}
		n := int(binary.BigEndian.Uint16(h[3:]))
		switch {
		case h[1] != 0x03:
			return 0, fmt.Errorf("obfs-local: tls: record version %#x %#x", h[1], h[2])
		case h[0] == recAppData || (h[0] == recHandshake && o.ccs):
			o.rem = n
		case h[0] == recHandshake || h[0] == recCCS:
			o.ccs = o.ccs || h[0] == recCCS
			if _, err := io.CopyN(io.Discard, o.Conn, int64(n)); err != nil {
				return 0, eof.Unexpected(err)
			}
		default:
			return 0, fmt.Errorf("obfs-local: tls: record type %#x", h[0])
		}
	}
	return o.readPayload(o.Conn, p)
}

// ReadWaiters offers WaitRead and TryRead where the connection underneath
// has them (readwait.Wrapper).
func (o *obfsTLSConn) ReadWaiters() (readwait.Waiter, readwait.TryReader) {
	return o.waiters.offer(o, o)
}

// CloseWrite ends the sending half of the TCP connection underneath.
func (o *obfsTLSConn) CloseWrite() error {
	if cw, ok := o.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("obfs-local: transport cannot half-close")
}
