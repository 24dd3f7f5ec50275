package xorobfs

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/skiffvpn/skiff/core/transport/udpgro"
)

// batchSize is how many packets one ReadBatch returns at most: as many as
// quic-go asks for.
const batchSize = 8

// wireSize holds one obfuscated packet: quic-go's largest (1452 bytes)
// plus the salt, with room to spare. A longer one could not be a packet of
// this connection and is dropped.
const wireSize = 2048

// batchReader reads several datagrams per call: a *udpgro.Conn, or x/net's
// recvmmsg on the bare socket.
type batchReader interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

// batchConn is the obfuscation on a UDP socket, shaped so that quic-go
// keeps its fast path: it is an OOBCapablePacketConn (ECN and packet info
// pass through, and GSO batches are obfuscated packet by packet, each with
// its own salt) and reads in batches, through udpgro's receive offload
// when the kernel has it.
type batchConn struct {
	*conn
	br batchReader

	// Under conn.rmu:
	rms []ipv4.Message // the wire packets of one batch
	one udpgro.Single  // ReadFrom and ReadMsgUDP as a batch of one (readBatch)

	// Under conn.wmu:
	woob []byte // the caller's control messages with the segment size changed
}

// NewConn wraps sock with scheme s and password, keeping batched reads,
// GSO and ECN when sock is a UDP socket.
func NewConn(sock net.PacketConn, s Scheme, password string) net.PacketConn {
	o := newConn(sock, s, password)
	if o.udp == nil {
		return o
	}
	c := &batchConn{conn: o, rms: make([]ipv4.Message, batchSize)}
	c.one.Mu, c.one.Batch = &c.rmu, c.readBatch
	if br, ok := udpgro.Wrap(o.udp).(batchReader); ok {
		c.br = br
	} else {
		c.br = ipv4.NewPacketConn(o.udp)
	}
	buf := make([]byte, batchSize*wireSize)
	for i := range c.rms {
		c.rms[i].Buffers = [][]byte{buf[i*wireSize : (i+1)*wireSize : (i+1)*wireSize]}
	}
	return c
}

// ReadBatch reads packets into ms, deobfuscated into each message's first
// buffer, with their senders and control messages; packets too short to
// carry a salt, or too long to be QUIC's, are dropped. It returns at least
// one packet unless it fails.
func (c *batchConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.readBatch(ms, flags)
}

func (c *batchConn) readBatch(ms []ipv4.Message, flags int) (int, error) {
	k := min(len(ms), len(c.rms))
	if k == 0 {
		return 0, nil
	}
	for {
		for i := range k {
			r := &c.rms[i]
			r.Buffers[0] = r.Buffers[0][:wireSize]
			r.OOB = ms[i].OOB // control messages go straight to the caller
			r.Addr = nil
		}
		n, err := c.br.ReadBatch(c.rms[:k], flags)
		if n <= 0 {
			if err == nil {
				err = errors.New("obfuscation: empty batch")
			}
			return 0, err
		}
		out := 0
		for j := range n {
			r := &c.rms[j]
			m := &ms[out]
			if r.Flags&unix.MSG_TRUNC != 0 || len(m.Buffers) == 0 {
				continue
			}
			p := c.rs.Deobfuscate(m.Buffers[0], r.Buffers[0][:r.N])
			if p < 0 {
				continue
			}
			m.N, m.Addr, m.Flags = p, r.Addr, r.Flags
			if out == j {
				m.NN = r.NN
			} else { // an earlier packet was dropped: move the control messages down
				m.NN = copy(m.OOB, r.OOB[:r.NN])
			}
			out++
		}
		if out > 0 {
			return out, nil
		}
	}
}

// ReadFrom reads one packet, deobfuscated.
func (c *batchConn) ReadFrom(p []byte) (int, net.Addr, error) { return c.one.ReadFrom(p) }

// ReadMsgUDP reads one packet, deobfuscated, and its control messages.
func (c *batchConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	return c.one.ReadMsgUDP(b, oob)
}

// WriteMsgUDP obfuscates b and sends it. When oob asks for GSO
// (UDP_SEGMENT), b is a run of packets of that size: each is obfuscated
// with its own salt, and the segment size grows by the salt's length.
func (c *batchConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	seg, at := segmentSize(oob)
	if seg == 0 {
		seg = max(len(b), 1)
	}
	salt := c.ws.saltLen
	if len(b)+(len(b)/seg+1)*salt > len(c.wbuf) {
		return 0, 0, errTooLarge
	}
	w := 0
	for off := 0; off < len(b) || off == 0; off += seg {
		c.rng.Read(c.salt)
		w += c.ws.Obfuscate(c.wbuf[w:], b[off:min(off+seg, len(b))], c.salt)
	}
	if at >= 0 {
		c.woob = append(c.woob[:0], oob...)
		binary.NativeEndian.PutUint16(c.woob[at:], uint16(seg+salt))
		oob = c.woob
	}
	_, oobn, err = c.udp.WriteMsgUDPAddrPort(c.wbuf[:w], oob, udpgro.AddrPort(addr))
	if err != nil {
		return 0, 0, err
	}
	return len(b), oobn, nil
}

// segmentSize returns the GSO segment size that oob asks for and where in
// oob its value is, or 0 and -1.
func segmentSize(oob []byte) (size, at int) {
	rest := oob
	for len(rest) > 0 {
		h, body, next, err := udpgro.ParseControlMessage(rest)
		if err != nil {
			break
		}
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_SEGMENT && len(body) >= 2 {
			return int(binary.NativeEndian.Uint16(body)), len(oob) - len(rest) + unix.CmsgLen(0)
		}
		rest = next
	}
	return 0, -1
}

// SyscallConn returns the socket's raw connection, for socket options.
func (c *batchConn) SyscallConn() (syscall.RawConn, error) { return c.udp.SyscallConn() }

// Offload reports whether pc (from NewConn) is the batching conn and, if
// so, the receive-offload reader it reads through (nil without offload).
func Offload(pc net.PacketConn) (g *udpgro.Conn, batched bool) {
	c, ok := pc.(*batchConn)
	if !ok {
		return nil, false
	}
	g, _ = c.br.(*udpgro.Conn)
	return g, true
}
