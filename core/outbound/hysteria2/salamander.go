package hysteria2

import (
	crand "crypto/rand"
	"crypto/subtle"
	"errors"
	"hash"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/crypto/blake2b"
)

const (
	salamanderSaltLen = 8
	salamanderKeyLen  = blake2b.Size256
	// maxUDPPacket is the largest UDP payload; the read buffer holds one.
	maxUDPPacket = 65535
)

// salamander is the "Salamander" obfuscator: every QUIC packet becomes
// 8 random salt bytes followed by the packet XORed with
// BLAKE2b-256(password || salt), the 32-byte hash repeated.
//
// It is not safe for concurrent use; each direction of a salamanderConn has
// its own.
type salamander struct {
	psk  []byte
	h    hash.Hash
	keys [salamanderKeyLen]byte
}

func newSalamander(psk []byte) *salamander {
	h, err := blake2b.New256(nil)
	if err != nil {
		panic(err) // only for a key longer than 64 bytes; nil is not
	}
	return &salamander{psk: psk, h: h}
}

// key computes the keystream block for salt into s.keys.
func (s *salamander) key(salt []byte) {
	s.h.Reset()
	s.h.Write(s.psk)
	s.h.Write(salt)
	s.h.Sum(s.keys[:0])
}

// obfuscate writes salt || (p XOR key) to dst, which must hold
// len(p)+salamanderSaltLen bytes; salt must be 8 bytes.
func (s *salamander) obfuscate(dst, p, salt []byte) int {
	copy(dst, salt[:salamanderSaltLen])
	s.key(dst[:salamanderSaltLen])
	xorKey(dst[salamanderSaltLen:], p, &s.keys)
	return len(p) + salamanderSaltLen
}

// deobfuscate writes the packet hidden in b to dst and returns its length,
// or -1 when b is too short to be a packet. dst must not overlap b.
func (s *salamander) deobfuscate(dst, b []byte) int {
	if len(b) <= salamanderSaltLen {
		return -1
	}
	s.key(b[:salamanderSaltLen])
	n := min(len(b)-salamanderSaltLen, len(dst))
	xorKey(dst[:n], b[salamanderSaltLen:salamanderSaltLen+n], &s.keys)
	return n
}

// xorKey sets dst[i] = src[i] ^ key[i%32]. dst and src must not overlap
// unless they are the same slice.
func xorKey(dst, src []byte, key *[salamanderKeyLen]byte) {
	for len(src) > 0 {
		n := subtle.XORBytes(dst, src, key[:]) // min of the lengths
		dst, src = dst[n:], src[n:]
	}
}

var errSalamanderShort = errors.New("salamander: packet too large for the buffer")

// salamanderConn wraps the UDP socket with Salamander. quic-go sees a plain
// net.PacketConn, so it reads and writes one packet per system call (no
// GSO, ECN or recvmmsg). On Linux newObfsConn wraps it further into a
// salamanderBatchConn, which gives those back; elsewhere this is the conn
// quic-go gets.
//
// It allocates nothing per packet: each direction has one buffer, and the
// server's address is returned from a cache.
type salamanderConn struct {
	conn net.PacketConn
	udp  *net.UDPConn // conn, when it is one: reads and writes without allocating

	rmu   sync.Mutex
	rbuf  []byte
	rs    *salamander
	raddr netip.AddrPort
	rnet  *net.UDPAddr

	wmu  sync.Mutex
	wbuf []byte
	ws   *salamander
	salt [salamanderSaltLen]byte
	rng  *rand.ChaCha8 // salts: a CSPRNG seeded from crypto/rand, without a system call per packet
}

func newSalamanderConn(conn net.PacketConn, password string) *salamanderConn {
	psk := []byte(password)
	udp, _ := conn.(*net.UDPConn)
	var seed [32]byte
	crand.Read(seed[:])
	return &salamanderConn{
		rng:  rand.NewChaCha8(seed),
		conn: conn,
		udp:  udp,
		rbuf: make([]byte, maxUDPPacket),
		rs:   newSalamander(psk),
		wbuf: make([]byte, maxUDPPacket),
		ws:   newSalamander(psk),
	}
}

// ReadFrom reads the next packet, drops those too short to carry a salt,
// and returns the deobfuscated packet.
func (c *salamanderConn) ReadFrom(p []byte) (int, net.Addr, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.udp == nil {
			n, addr, err := c.conn.ReadFrom(c.rbuf)
			if err != nil {
				return 0, nil, err
			}
			if m := c.rs.deobfuscate(p, c.rbuf[:n]); m >= 0 {
				return m, addr, nil
			}
			continue
		}
		n, ap, err := c.udp.ReadFromUDPAddrPort(c.rbuf)
		if err != nil {
			return 0, nil, err
		}
		m := c.rs.deobfuscate(p, c.rbuf[:n])
		if m < 0 {
			continue
		}
		if ap != c.raddr || c.rnet == nil {
			c.raddr = ap
			c.rnet = net.UDPAddrFromAddrPort(ap)
		}
		return m, c.rnet, nil
	}
}

// WriteTo obfuscates p with a fresh salt and sends it.
func (c *salamanderConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if len(p)+salamanderSaltLen > len(c.wbuf) {
		return 0, errSalamanderShort
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.rng.Read(c.salt[:])
	n := c.ws.obfuscate(c.wbuf, p, c.salt[:])
	var err error
	if ua, ok := addr.(*net.UDPAddr); ok && c.udp != nil {
		_, err = c.udp.WriteToUDPAddrPort(c.wbuf[:n], ua.AddrPort())
	} else {
		_, err = c.conn.WriteTo(c.wbuf[:n], addr)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes the socket.
func (c *salamanderConn) Close() error { return c.conn.Close() }

// LocalAddr returns the socket's address.
func (c *salamanderConn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// SetDeadline sets the socket's deadlines.
func (c *salamanderConn) SetDeadline(t time.Time) error { return c.conn.SetDeadline(t) }

// SetReadDeadline sets the socket's read deadline.
func (c *salamanderConn) SetReadDeadline(t time.Time) error { return c.conn.SetReadDeadline(t) }

// SetWriteDeadline sets the socket's write deadline.
func (c *salamanderConn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// SetReadBuffer and SetWriteBuffer let quic-go size the socket's buffers
// as it does for a bare UDP socket.
func (c *salamanderConn) SetReadBuffer(n int) error {
	if c.udp == nil {
		return nil
	}
	return c.udp.SetReadBuffer(n)
}

// SetWriteBuffer sets the socket's send buffer size.
func (c *salamanderConn) SetWriteBuffer(n int) error {
	if c.udp == nil {
		return nil
	}
	return c.udp.SetWriteBuffer(n)
}
