package shadowsocks

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"golang.org/x/crypto/chacha20poly1305"
)

// packetConn is a Shadowsocks UDP session: datagrams to any destination on
// one connected UDP socket toward the server.
//
// 2022: the client picks a random session id and numbers its packets from
// 0; the server answers from a session of its own, whose packets pass a
// sliding replay window. AES methods encrypt the 16-byte separate header
// (session id, packet id) with AES keyed by the PSK and seal the body with
// a per-session key, nonce = header bytes 4-15; the ChaCha method seals
// everything with XChaCha20-Poly1305 keyed by the PSK under a random
// 24-byte nonce. Classic AEAD: each datagram is salt | seal(addr, data)
// with the salt's subkey and a zero nonce.
type packetConn struct {
	c    *Client
	conn net.Conn

	session  [8]byte
	packetID atomic.Uint64
	enc      cipher.AEAD // 2022: this session's body AEAD (AES) or the PSK's XChaCha

	rmu       sync.Mutex
	srvID     [8]byte
	srvAEAD   cipher.AEAD // AES: the server session's body AEAD
	srvWindow packetWindow
	haveSrv   bool
	lastSrc   flow.Addr
	lastBox   net.Addr // lastSrc boxed once, so ReadFrom does not allocate

	closeOnce sync.Once
}

func newPacketConn(c *Client, conn net.Conn) *packetConn {
	p := &packetConn{c: c, conn: conn}
	rand.Read(p.session[:])
	if c.m.is2022 {
		var err error
		if c.m.aes {
			var km [40]byte
			n := copy(km[:], c.k.user)
			n += copy(km[n:], p.session[:])
			var sk [32]byte
			deriveKey(sk[:c.m.keyLen], ctxSession, km[:n])
			p.enc, err = c.m.newAEAD(sk[:c.m.keyLen])
		} else {
			p.enc, err = chacha20poly1305.NewX(c.k.user)
		}
		if err != nil {
			panic("shadowsocks: udp key: " + err.Error()) // key lengths are checked by New
		}
	}
	return p
}

// WriteTo sends p to addr (a flow.Addr or *net.UDPAddr) through the
// server.
func (p *packetConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	dst, err := flow.AddrFromNet(addr)
	if err != nil {
		return 0, fmt.Errorf("shadowsocks: udp via %s: %w", p.c.addr, err)
	}
	bp := getBuf()
	defer putBuf(bp)
	pkt, err := p.seal((*bp)[:0], b, dst, time.Now())
	if err != nil {
		return 0, fmt.Errorf("shadowsocks: udp via %s: %w", p.c.addr, err)
	}
	if _, err := p.conn.Write(pkt); err != nil {
		return 0, fmt.Errorf("shadowsocks: udp to %s: %w", p.c.addr, err)
	}
	return len(b), nil
}

// seal appends the packet carrying payload to dst.
func (p *packetConn) seal(buf, payload []byte, dst flow.Addr, now time.Time) ([]byte, error) {
	m, k := p.c.m, p.c.k
	if len(payload) > bufSize-1024 {
		return nil, fmt.Errorf("datagram of %d bytes is too large", len(payload))
	}
	switch {
	case !m.is2022:
		salt := buf[:m.keyLen]
		rand.Read(salt)
		aead, err := m.aeadFor(k.user, salt)
		if err != nil {
			return nil, err
		}
		body, err := appendAddr(buf[m.keyLen:m.keyLen], dst)
		if err != nil {
			return nil, err
		}
		body = append(body, payload...)
		var zero [xnonceLen]byte
		sealed := aead.Seal(body[:0], zero[:aead.NonceSize()], body, nil)
		return buf[:m.keyLen+len(sealed)], nil
	case m.aes:
		hdrLen := udpHeaderLen + 16*len(k.identity)
		buf = buf[:hdrLen]
		hdr := buf[:udpHeaderLen]
		p.putHeader(hdr)
		body, err := appendUDPRequestBody(buf[hdrLen:hdrLen], now, dst)
		if err != nil {
			return nil, err
		}
		body = append(body, payload...)
		sealed := p.enc.Seal(body[:0], hdr[4:16], body, nil)
		for i := range k.identity {
			var x [16]byte
			for j := range x {
				x[j] = k.idHash[i][j] ^ hdr[j]
			}
			k.idBlocks[i].Encrypt(buf[udpHeaderLen+16*i:], x[:])
		}
		k.separateHeaderBlock().Encrypt(hdr, hdr)
		return buf[:hdrLen+len(sealed)], nil
	default:
		nonce := buf[:xnonceLen]
		rand.Read(nonce)
		plain := buf[xnonceLen : xnonceLen+udpHeaderLen]
		p.putHeader(plain)
		body, err := appendUDPRequestBody(plain[udpHeaderLen:udpHeaderLen], now, dst)
		if err != nil {
			return nil, err
		}
		plain = append(plain, body...)
		plain = append(plain, payload...)
		sealed := p.enc.Seal(plain[:0], nonce, plain, nil)
		return buf[:xnonceLen+len(sealed)], nil
	}
}

// putHeader writes a 2022 packet's separate header into h: the session id
// and the next packet id.
func (p *packetConn) putHeader(h []byte) {
	copy(h, p.session[:])
	binary.BigEndian.PutUint64(h[8:], p.packetID.Add(1)-1)
}

// ReadFrom returns the next datagram from the server and its source.
// Packets that fail authentication, come from a stale or replayed server
// packet, or carry another session's id are dropped.
func (p *packetConn) ReadFrom(b []byte) (int, net.Addr, error) {
	bp := getBuf()
	defer putBuf(bp)
	buf := *bp
	for {
		n, err := p.conn.Read(buf)
		if err != nil {
			return 0, nil, fmt.Errorf("shadowsocks: udp from %s: %w", p.c.addr, err)
		}
		p.rmu.Lock()
		src, payload, err := p.open(buf[:n], time.Now())
		if err != nil {
			p.rmu.Unlock()
			continue
		}
		if src != p.lastSrc || p.lastBox == nil {
			p.lastSrc, p.lastBox = src, src
		}
		box := p.lastBox
		p.rmu.Unlock()
		return copy(b, payload), box, nil
	}
}

var errShortPacket = errors.New("short packet")

// open authenticates and decrypts one packet in place. The caller holds
// rmu.
func (p *packetConn) open(pkt []byte, now time.Time) (flow.Addr, []byte, error) {
	m, k := p.c.m, p.c.k
	var body []byte
	switch {
	case !m.is2022:
		if len(pkt) < m.keyLen+tagLen {
			return flow.Addr{}, nil, errShortPacket
		}
		aead, err := m.aeadFor(k.user, pkt[:m.keyLen])
		if err != nil {
			return flow.Addr{}, nil, err
		}
		var zero [xnonceLen]byte
		plain, err := aead.Open(pkt[m.keyLen:m.keyLen], zero[:aead.NonceSize()], pkt[m.keyLen:], nil)
		if err != nil {
			return flow.Addr{}, nil, errAuth
		}
		src, n, err := parseAddr(plain)
		if err != nil {
			return flow.Addr{}, nil, err
		}
		return src, plain[n:], nil
	case m.aes:
		if len(pkt) < udpHeaderLen+tagLen {
			return flow.Addr{}, nil, errShortPacket
		}
		hdr := pkt[:udpHeaderLen]
		k.userBlock.Decrypt(hdr, hdr)
		aead := p.srvAEAD
		if !p.haveSrv || [8]byte(hdr[:8]) != p.srvID {
			var km [40]byte
			c := copy(km[:], k.user)
			c += copy(km[c:], hdr[:8])
			var sk [32]byte
			deriveKey(sk[:m.keyLen], ctxSession, km[:c])
			var err error
			if aead, err = m.newAEAD(sk[:m.keyLen]); err != nil {
				return flow.Addr{}, nil, err
			}
		}
		plain, err := aead.Open(pkt[udpHeaderLen:udpHeaderLen], hdr[4:16], pkt[udpHeaderLen:], nil)
		if err != nil {
			return flow.Addr{}, nil, errAuth
		}
		body = plain
		if err := p.acceptServerPacket(hdr, aead); err != nil {
			return flow.Addr{}, nil, err
		}
	default:
		if len(pkt) < xnonceLen+udpHeaderLen+tagLen {
			return flow.Addr{}, nil, errShortPacket
		}
		plain, err := p.enc.Open(pkt[xnonceLen:xnonceLen], pkt[:xnonceLen], pkt[xnonceLen:], nil)
		if err != nil {
			return flow.Addr{}, nil, errAuth
		}
		if err := p.acceptServerPacket(plain[:udpHeaderLen], nil); err != nil {
			return flow.Addr{}, nil, err
		}
		body = plain[udpHeaderLen:]
	}
	src, off, err := parseUDPResponseBody(body, p.session[:], now)
	if err != nil {
		return flow.Addr{}, nil, err
	}
	return src, body[off:], nil
}

// acceptServerPacket runs the replay window of the server session named in
// hdr (session id, packet id), switching to a new server session when the
// server started one.
func (p *packetConn) acceptServerPacket(hdr []byte, aead cipher.AEAD) error {
	id := [8]byte(hdr[:8])
	pid := binary.BigEndian.Uint64(hdr[8:16])
	if !p.haveSrv || id != p.srvID {
		p.srvID, p.srvAEAD, p.haveSrv = id, aead, true
		p.srvWindow = packetWindow{}
	}
	if !p.srvWindow.check(pid) {
		return errors.New("replayed or stale packet")
	}
	return nil
}

// Close closes the session's socket.
func (p *packetConn) Close() error { return p.c.flows.CloseOnce(&p.closeOnce, p, p.conn.Close) }

// LocalAddr returns the socket's local address.
func (p *packetConn) LocalAddr() net.Addr { return p.conn.LocalAddr() }

// SetDeadline sets the socket's read and write deadlines.
func (p *packetConn) SetDeadline(t time.Time) error { return p.conn.SetDeadline(t) }

// SetReadDeadline sets the socket's read deadline.
func (p *packetConn) SetReadDeadline(t time.Time) error { return p.conn.SetReadDeadline(t) }

// SetWriteDeadline sets the socket's write deadline.
func (p *packetConn) SetWriteDeadline(t time.Time) error { return p.conn.SetWriteDeadline(t) }
