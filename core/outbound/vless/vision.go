package vless

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// Vision (flow xtls-rprx-vision) hides the sizes of the inner TLS
// handshake that a proxied HTTPS connection starts inside the outer TLS
// (or REALITY) layer, and skips the outer encryption once the inner TLS
// protects the data by itself.
//
// Each direction's first packets go as blocks: the user's UUID (first
// block of a direction only), a command, the content length (u16,
// big-endian), the padding length (u16), the content, the padding. Command
// 0 means more blocks follow; 1 ends the blocks, and the stream goes on
// unchanged inside the outer TLS; 2 ends them too, and the rest of that
// direction is written on the TCP socket itself, outside the outer TLS
// (direct copy). Each side watches the first packets of both directions:
// a ClientHello or ServerHello makes the flow TLS (long padding, up to
// 900+ bytes, for short blocks); a TLS 1.3 ServerHello whose cipher is not
// TLS_AES_128_CCM_8_SHA256 allows direct copy; the first inner
// application-data record (17 03 03) ends the blocks, with command 2 when
// direct copy is allowed and 1 otherwise. A flow that shows no TLS ends its
// blocks after the first packets.
//
// The VLESS request and response headers go before the blocks, unpadded.

// Vision commands.
const (
	visionContinue byte = 0
	visionEnd      byte = 1
	visionDirect   byte = 2
)

const (
	// visionMaxBlock bounds a block, UUID and header included.
	visionMaxBlock = 8192
	// visionMaxContent is the most content a block carries.
	visionMaxContent = visionMaxBlock - 16 - 5
	// visionFilterPackets is how many packets (both directions) are
	// inspected for the inner TLS handshake.
	visionFilterPackets = 8
)

// visionState is what both directions of one flow learn about its inner
// traffic.
type visionState struct {
	mu      sync.Mutex
	left    int  // packets still to inspect
	isTLS   bool // a ClientHello or a ServerHello went by
	tls12up bool // a ServerHello went by
	xtls    bool // TLS 1.3 without CCM_8: direct copy allowed
}

// tls13SupportedVersions is the supported_versions extension of a TLS 1.3
// ServerHello.
var tls13SupportedVersions = []byte{0x00, 0x2b, 0x00, 0x02, 0x03, 0x04}

// inspect looks at one packet of either direction.
func (s *visionState) inspect(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left <= 0 || len(p) == 0 {
		return
	}
	s.left--
	if len(p) < 6 || p[0] != 0x16 || p[1] != 0x03 {
		return
	}
	switch p[5] {
	case 1: // ClientHello
		s.isTLS = true
	case 2: // ServerHello
		s.isTLS, s.tls12up = true, true
		s.left = 0
		if len(p) < 44 {
			return
		}
		at := 44 + int(p[43]) // record (5), handshake (4), version (2), random (32), session id
		if at+2 > len(p) {
			return
		}
		suite := uint16(p[at])<<8 | uint16(p[at+1])
		if bytes.Contains(p[at:], tls13SupportedVersions) && suite != 0x1305 {
			s.xtls = true
		}
	}
}

// get returns what is known so far.
func (s *visionState) get() (isTLS, tls12up, xtls bool, left int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isTLS, s.tls12up, s.xtls, s.left
}

// isAppData reports whether p starts with a TLS 1.2/1.3 application-data
// record.
func isAppData(p []byte) bool { return len(p) >= 3 && p[0] == 0x17 && p[1] == 0x03 && p[2] == 0x03 }

// visionConn is one Vision flow over the outer TLS connection tr.
type visionConn struct {
	tr     *tlsconf.Conn
	uuid   UUID
	st     visionState
	direct bool // tr can go raw (tlsconf.Conn.CanDetach)

	wmu      sync.Mutex
	hdrLeft  int  // request-header bytes at the start of the next Write, sent unpadded
	wFirst   bool // the next block carries the UUID
	wPadding bool // blocks still go out
	wDirect  bool // writes go on the socket

	// Read side: one reader at a time. The blocks are read into the
	// caller's buffer and decoded in place (decodeInPlace): the flow holds
	// no buffer of its own.
	dec     visionDecoder
	out     []byte          // decoded content that did not fit the caller's buffer
	pending []byte          // raw bytes to return before reading raw (after command 2)
	raw     io.Reader       // non-nil after command 2: the socket
	rawWait readwait.Waiter // raw's, set with it; nil: it cannot wait
}

// newVisionConn returns the flow over tr whose first Write starts with
// a request header of hdrLen bytes.
func newVisionConn(tr *tlsconf.Conn, id UUID, hdrLen int) *visionConn {
	c := &visionConn{tr: tr, uuid: id, direct: tr.CanDetach(), hdrLeft: hdrLen, wFirst: true, wPadding: true}
	c.st.left = visionFilterPackets
	c.dec.uuid = id
	return c
}

// Write sends p: as blocks while padding lasts, then through the outer
// TLS or, after command 2, on the socket.
func (c *visionConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wDirect {
		return c.tr.RawWrite(p)
	}
	if !c.wPadding {
		return c.tr.Write(p)
	}
	hdr := min(c.hdrLeft, len(p))
	c.hdrLeft -= hdr
	body := p[hdr:]
	buf := visionBufs.Get().(*[2 * visionMaxBlock]byte) // only for this Write: a flow holds none between them
	defer visionBufs.Put(buf)
	out := append(buf[:0], p[:hdr]...)
	cmd := byte(0)
	var err error
	if len(body) == 0 {
		_, err = c.tr.Write(out)
	} else {
		c.st.inspect(body)
		isTLS, tls12up, xtls, left := c.st.get()
		switch {
		case isTLS && isAppData(body):
			cmd = visionEnd
			if xtls && c.direct {
				cmd = visionDirect
			}
		case !tls12up && left <= 1:
			cmd = visionEnd
		}
		// One Write per block: TLS starts a record at each Write, so a
		// block's header is never cut across records, which the field's
		// servers need (they judge a block's end at each record's end).
		for len(body) > 0 && err == nil {
			n := min(len(body), visionMaxContent)
			b := visionContinue
			if n == len(body) {
				b = cmd
			}
			out = c.appendBlock(out, body[:n], b, isTLS)
			body = body[n:]
			_, err = c.tr.Write(out)
			out = out[:0]
		}
	}
	if err != nil {
		return 0, err
	}
	if cmd != visionContinue {
		c.wPadding = false
		c.wDirect = cmd == visionDirect
	}
	return len(p), nil
}

// appendBlock appends one block of content with command cmd; long pads a
// short block (a TLS handshake message) to 900 bytes or more.
func (c *visionConn) appendBlock(out, content []byte, cmd byte, long bool) []byte {
	room := visionMaxBlock - 5 - len(content)
	if c.wFirst {
		out = append(out, c.uuid[:]...)
		c.wFirst = false
		room -= 16
	}
	var pad int
	if long && len(content) < 900 {
		pad = rand.IntN(500) + 900 - len(content)
	} else {
		pad = rand.IntN(256)
	}
	pad = max(min(pad, room), 0)
	out = append(out, cmd, byte(len(content)>>8), byte(len(content)), byte(pad>>8), byte(pad))
	out = append(out, content...)
	return append(out, make([]byte, pad)...)
}

// Read returns the flow's data: the response header, then the blocks'
// content, then what follows them, from the outer TLS or (after command
// 2) from the socket.
func (c *visionConn) Read(p []byte) (int, error) {
	for {
		switch {
		case len(c.out) > 0:
			n := copy(p, c.out)
			if c.out = c.out[n:]; len(c.out) == 0 {
				c.out = nil
			}
			return n, nil
		case len(c.pending) > 0:
			n := copy(p, c.pending)
			if c.pending = c.pending[n:]; len(c.pending) == 0 {
				c.pending = nil
			}
			return n, nil
		case c.raw != nil:
			return c.raw.Read(p)
		case c.dec.plain():
			return c.tr.Read(p)
		case len(p) == 0:
			return 0, nil
		}
		n, err := c.tr.Read(p)
		if n == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			if err == io.EOF && !c.dec.idle() {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		m, rest, err := c.decodeInPlace(p[:n])
		if err != nil {
			return 0, fmt.Errorf("vless: vision: %w", err)
		}
		if c.dec.state == vsDirect {
			if err := c.detach(rest); err != nil {
				return 0, err
			}
		}
		if m > 0 {
			return m, nil
		}
	}
}

// detach goes on from the socket after the server's command 2; rest is
// what the last read brought after the blocks.
func (c *visionConn) detach(rest []byte) error {
	if !c.direct {
		return errors.New("vless: vision: the server switched to direct copy over a transport that cannot")
	}
	buffered, sock := c.tr.DetachRead()
	c.pending = append(append(c.pending, rest...), buffered...)
	c.raw = sock
	if sc, ok := sock.(net.Conn); ok {
		c.rawWait = readwait.Of(sc)
	}
	return nil
}

// decodeInPlace decodes the n bytes of in (just read into the caller's
// buffer) into in itself: the content of a block moves forward over its
// header and the padding before it, never past what was decoded, so it
// returns the decoded length m (the bytes are in[:m]). Once the blocks
// have ended with command 2, rest is what in holds after them (raw bytes);
// in holds no rest otherwise.
//
// The one case where more comes out than goes in is a UUID cut across
// reads that then turns out to be data: its first bytes come out again,
// in front of what this read brought. That read is decoded aside, and
// what does not fit in goes to c.out.
func (c *visionConn) decodeInPlace(in []byte) (m int, rest []byte, err error) {
	dst := in[:0]
	if c.dec.state == vsUUID && c.dec.hn > 0 {
		dst = make([]byte, 0, len(in)+len(c.dec.uuid))
	}
	used, out, err := c.dec.decode(in, dst)
	if err != nil {
		return 0, nil, err
	}
	if len(out) > c.dec.passed {
		c.st.inspect(out[c.dec.passed:])
	}
	if len(out) > 0 && &out[0] != &in[0] {
		// Decoded aside: rest, if any, is still where it was in in, and
		// must be set aside before in is overwritten.
		rest = append([]byte(nil), in[used:]...)
		m = copy(in, out)
		if m < len(out) {
			c.out = append(c.out, out[m:]...)
		}
		return m, rest, nil
	}
	return len(out), in[used:], nil
}

// WaitRead waits until a Read would find bytes, without reading them
// (readwait.Waiter): on the outer TLS, or on the socket after command 2.
// It returns at once while it holds bytes of its own (a part of a block
// may then leave the Read waiting for the rest). The padding of a block
// whose content a Read took (a Read into a buffer that ended with the
// content) is dropped first, as far as it is already there, so that it
// does not count as bytes to read.
func (c *visionConn) WaitRead() bool {
	if c.skipPadding() != nil {
		return true // the Read reports it
	}
	switch {
	case len(c.out) > 0 || len(c.pending) > 0:
		return true
	case c.raw != nil:
		return c.rawWait != nil && c.rawWait.WaitRead()
	}
	return c.tr.WaitRead()
}

// skipPadding reads and drops the padding of the current block that the
// outer TLS has at hand, without waiting.
func (c *visionConn) skipPadding() error {
	var scratch [256]byte
	for c.raw == nil && c.dec.state == vsPadding {
		n, err := c.tr.TryRead(scratch[:min(c.dec.left, len(scratch))])
		if n == 0 || err != nil {
			return nil // an error shows again on the next Read
		}
		c.dec.decode(scratch[:n], nil) // padding alone: nothing comes out
		if c.dec.state == vsDirect {
			return c.detach(nil)
		}
	}
	return nil
}

// visionBufs holds the buffers in which a Write's blocks are built, only
// for that Write: a flow holds none between its Writes.
var visionBufs = sync.Pool{New: func() any { return new([2 * visionMaxBlock]byte) }}

// TryRead returns what can be read without waiting (see
// tlsconf.Conn.TryRead), so that the stream above hands on large chunks
// once the blocks have ended.
func (c *visionConn) TryRead(p []byte) (int, error) {
	switch {
	case len(c.out) > 0 || len(c.pending) > 0:
		return c.Read(p) // buffered: does not wait
	case c.raw == nil && c.dec.plain():
		return c.tr.TryRead(p)
	}
	return 0, nil
}

func (c *visionConn) Close() error {
	c.wmu.Lock()
	direct := c.wDirect
	c.wmu.Unlock()
	if direct {
		return c.tr.CloseRaw()
	}
	return c.tr.Close()
}

// CloseWrite ends the flow's sending half, so that the server passes
// the app's close on: a close_notify while the blocks go through TLS, the
// socket's FIN once writes go on it raw (a close_notify there would be
// read as data). Without it a Vision flow ended only HalfCloseIdle after
// the app had closed.
func (c *visionConn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wDirect {
		return c.tr.CloseRawWrite()
	}
	return c.tr.CloseWrite()
}

func (c *visionConn) LocalAddr() net.Addr  { return c.tr.LocalAddr() }
func (c *visionConn) RemoteAddr() net.Addr { return c.tr.RemoteAddr() }

func (c *visionConn) SetDeadline(t time.Time) error      { return c.tr.SetDeadline(t) }
func (c *visionConn) SetReadDeadline(t time.Time) error  { return c.tr.SetReadDeadline(t) }
func (c *visionConn) SetWriteDeadline(t time.Time) error { return c.tr.SetWriteDeadline(t) }

// visionDecoder states.
const (
	vsRespHead  = iota // the VLESS response header's first two bytes
	vsRespAddon        // its addons
	vsUUID             // the UUID that starts the server's blocks, or not
	vsHead             // a block's header
	vsContent          // a block's content
	vsPadding          // a block's padding
	vsPlain            // blocks ended (command 1), or the server sent none
	vsDirect           // blocks ended with command 2
)

// visionDecoder takes the server's side of a Vision flow apart: the
// response header passes through, blocks give their content.
type visionDecoder struct {
	uuid  UUID
	state int
	hdr   [5]byte
	hn    int // header bytes read
	left  int // bytes left of the addons, content or padding
	cmd   byte

	passed int // bytes at the start of decode's output that are the response header
}

// plain reports whether the blocks have ended with command 1 (or never
// began): the rest passes unchanged.
func (d *visionDecoder) plain() bool { return d.state == vsPlain }

// idle reports whether the decoder is between blocks (EOF here is clean).
func (d *visionDecoder) idle() bool {
	return d.state == vsPlain || d.state == vsUUID || (d.state == vsHead || d.state == vsRespHead) && d.hn == 0
}

var errVisionHeader = errors.New("bad response header")

// decode consumes bytes of in and appends what they carry to out. It stops
// after a block with command 2 (state vsDirect): the rest of in is not
// Vision's. In vsPlain it passes everything through.
func (d *visionDecoder) decode(in, out []byte) (used int, _ []byte, _ error) {
	d.passed = 0
	for used < len(in) {
		b := in[used:]
		switch d.state {
		case vsRespHead:
			n := min(2-d.hn, len(b))
			copy(d.hdr[d.hn:], b[:n])
			out = append(out, b[:n]...)
			d.passed += n
			d.hn += n
			used += n
			if d.hn == 2 {
				if d.hdr[0] != 0 {
					return used, out, errVisionHeader
				}
				d.left, d.hn = int(d.hdr[1]), 0
				d.state = vsRespAddon
			}
		case vsRespAddon:
			n := min(d.left, len(b))
			out = append(out, b[:n]...)
			d.passed += n
			d.left -= n
			used += n
			if d.left == 0 {
				d.state = vsUUID
			}
		case vsUUID:
			// The blocks start with the UUID; anything else means the
			// server sends no blocks. A UUID cut by the read is matched
			// on across reads (hn bytes so far).
			n := min(16-d.hn, len(b))
			if !bytes.Equal(b[:n], d.uuid[d.hn:d.hn+n]) {
				out = append(out, d.uuid[:d.hn]...) // what matched was data after all
				d.hn = 0
				d.state = vsPlain
				continue
			}
			d.hn += n
			used += n
			if d.hn == 16 {
				d.hn = 0
				d.state = vsHead
			}
		case vsHead:
			n := min(5-d.hn, len(b))
			copy(d.hdr[d.hn:], b[:n])
			d.hn += n
			used += n
			if d.hn == 5 {
				d.hn = 0
				d.cmd = d.hdr[0]
				if d.cmd > visionDirect {
					return used, out, fmt.Errorf("unknown command %d", d.cmd)
				}
				d.left = int(d.hdr[1])<<8 | int(d.hdr[2])
				d.state = vsContent
				d.settle()
			}
		case vsContent:
			n := min(d.left, len(b))
			out = append(out, b[:n]...)
			d.left -= n
			used += n
			d.settle()
		case vsPadding:
			n := min(d.left, len(b))
			d.left -= n
			used += n
			d.settle()
		case vsPlain:
			out = append(out, b...)
			used = len(in)
		case vsDirect:
			return used, out, nil
		}
	}
	return used, out, nil
}

// settle moves past a finished content or padding (of any length, zero
// included), so that the decoder never waits for zero bytes.
func (d *visionDecoder) settle() {
	if d.state == vsContent && d.left == 0 {
		d.left = int(d.hdr[3])<<8 | int(d.hdr[4])
		d.state = vsPadding
	}
	if d.state == vsPadding && d.left == 0 {
		switch d.cmd {
		case visionContinue:
			d.state = vsHead
		case visionEnd:
			d.state = vsPlain
		case visionDirect:
			d.state = vsDirect
		}
	}
}
