// Package xorobfs is the packet obfuscation both Hysteria versions put on
// their UDP socket: every QUIC packet becomes a random salt followed by the
// packet XORed with a 32-byte hash of the password and the salt, the hash
// repeated. Hysteria 2's Salamander salts with 8 bytes and hashes with
// BLAKE2b-256; Hysteria 1's xplus salts with 16 and hashes with SHA-256.
// The conns keep quic-go's fast path where they can (see NewConn).
package xorobfs

import (
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"hash"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"

	"golang.org/x/crypto/blake2b"

	"github.com/skiffvpn/skiff/core/transport/udpgro"
)

// keyLen is the hash's size, the keystream block of both schemes.
const keyLen = 32

// maxUDPPacket is the largest UDP payload; the read buffer holds one.
const maxUDPPacket = 65535

// Scheme is one obfuscation: its salt length and hash.
type Scheme struct {
	Name    string
	SaltLen int
	NewHash func() hash.Hash // a 32-byte hash of password || salt
}

// Salamander is Hysteria 2's obfuscation (PROTOCOL.md, "Salamander").
var Salamander = Scheme{Name: "salamander", SaltLen: 8, NewHash: newBlake2b256}

// XPlus is Hysteria 1's obfuscation (apernet/hysteria v1
// core/pktconns/obfs/obfs.go).
var XPlus = Scheme{Name: "xplus", SaltLen: 16, NewHash: sha256.New}

// Wrap returns the socket a Hysteria connection runs on: sock obfuscated
// with s (NewConn) when password is set, otherwise sock with the receive
// offload (udpgro.Wrap).
func (s Scheme) Wrap(sock net.PacketConn, password string) net.PacketConn {
	if password == "" {
		return udpgro.Wrap(sock)
	}
	return NewConn(sock, s, password)
}

func newBlake2b256() hash.Hash {
	h, err := blake2b.New256(nil)
	if err != nil {
		panic(err) // only for a key longer than 64 bytes; nil is not
	}
	return h
}

// Obfuscator obfuscates and deobfuscates packets of one scheme and
// password. It is not safe for concurrent use; each direction of a conn
// has its own.
type Obfuscator struct {
	saltLen int
	psk     []byte
	h       hash.Hash
	keys    [keyLen]byte
}

// New returns an Obfuscator for password psk.
func (s Scheme) New(psk []byte) *Obfuscator {
	return &Obfuscator{saltLen: s.SaltLen, psk: psk, h: s.NewHash()}
}

// SaltLen is the salt's length: what obfuscation adds to a packet.
func (o *Obfuscator) SaltLen() int { return o.saltLen }

// key computes the keystream block for salt into o.keys.
func (o *Obfuscator) key(salt []byte) {
	o.h.Reset()
	o.h.Write(o.psk)
	o.h.Write(salt)
	o.h.Sum(o.keys[:0])
}

// Obfuscate writes salt || (p XOR key) to dst, which must hold
// len(p)+SaltLen bytes; salt must be SaltLen bytes long.
func (o *Obfuscator) Obfuscate(dst, p, salt []byte) int {
	copy(dst, salt[:o.saltLen])
	o.key(dst[:o.saltLen])
	xorKey(dst[o.saltLen:], p, &o.keys)
	return len(p) + o.saltLen
}

// Deobfuscate writes the packet hidden in b to dst and returns its length,
// or -1 when b is too short to be a packet. dst must not overlap b.
func (o *Obfuscator) Deobfuscate(dst, b []byte) int {
	if len(b) <= o.saltLen {
		return -1
	}
	o.key(b[:o.saltLen])
	n := min(len(b)-o.saltLen, len(dst))
	xorKey(dst[:n], b[o.saltLen:o.saltLen+n], &o.keys)
	return n
}

// xorKey sets dst[i] = src[i] ^ key[i%32]. dst and src must not overlap
// unless they are the same slice.
func xorKey(dst, src []byte, key *[keyLen]byte) {
	for len(src) > 0 {
		n := subtle.XORBytes(dst, src, key[:]) // min of the lengths
		dst, src = dst[n:], src[n:]
	}
}

var errTooLarge = errors.New("obfuscation: packet too large for the buffer")

// conn wraps the UDP socket with an obfuscation. quic-go sees a plain
// net.PacketConn, so it reads and writes one packet per system call (no
// GSO, ECN or recvmmsg). On Linux NewConn wraps it further into a
// batchConn, which gives those back; elsewhere this is the conn quic-go
// gets.
//
// It allocates nothing per packet: each direction has one buffer, and the
// server's address is returned from a cache. Close, LocalAddr and the
// deadlines are the socket's.
type conn struct {
	net.PacketConn
	udp *net.UDPConn // the socket, when it is one: reads and writes without allocating

	rmu   sync.Mutex
	rbuf  []byte
	rs    *Obfuscator
	raddr netip.AddrPort
	rnet  *net.UDPAddr

	wmu  sync.Mutex
	wbuf []byte
	ws   *Obfuscator
	salt []byte
	rng  *rand.ChaCha8 // salts: a CSPRNG seeded from crypto/rand, without a system call per packet
}

// newConn wraps sock with scheme s and password.
func newConn(sock net.PacketConn, s Scheme, password string) *conn {
	psk := []byte(password)
	udp, _ := sock.(*net.UDPConn)
	var seed [32]byte
	crand.Read(seed[:])
	return &conn{
		rng:        rand.NewChaCha8(seed),
		PacketConn: sock,
		udp:        udp,
		rbuf:       make([]byte, maxUDPPacket),
		rs:         s.New(psk),
		wbuf:       make([]byte, maxUDPPacket),
		ws:         s.New(psk),
		salt:       make([]byte, s.SaltLen),
	}
}

// ReadFrom reads the next packet, drops those too short to carry a salt,
// and returns the deobfuscated packet.
func (c *conn) ReadFrom(p []byte) (int, net.Addr, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.udp == nil {
			n, addr, err := c.PacketConn.ReadFrom(c.rbuf)
			if err != nil {
				return 0, nil, err
			}
			if m := c.rs.Deobfuscate(p, c.rbuf[:n]); m >= 0 {
				return m, addr, nil
			}
			continue
		}
		n, ap, err := c.udp.ReadFromUDPAddrPort(c.rbuf)
		if err != nil {
			return 0, nil, err
		}
		m := c.rs.Deobfuscate(p, c.rbuf[:n])
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
func (c *conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if len(p)+c.ws.saltLen > len(c.wbuf) {
		return 0, errTooLarge
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.rng.Read(c.salt)
	n := c.ws.Obfuscate(c.wbuf, p, c.salt)
	var err error
	if ua, ok := addr.(*net.UDPAddr); ok && c.udp != nil {
		_, err = c.udp.WriteToUDPAddrPort(c.wbuf[:n], ua.AddrPort())
	} else {
		_, err = c.PacketConn.WriteTo(c.wbuf[:n], addr)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetReadBuffer and SetWriteBuffer let quic-go size the socket's buffers
// as it does for a bare UDP socket.
func (c *conn) SetReadBuffer(n int) error {
	if c.udp == nil {
		return nil
	}
	return c.udp.SetReadBuffer(n)
}

// SetWriteBuffer sets the socket's send buffer size.
func (c *conn) SetWriteBuffer(n int) error {
	if c.udp == nil {
		return nil
	}
	return c.udp.SetWriteBuffer(n)
}
