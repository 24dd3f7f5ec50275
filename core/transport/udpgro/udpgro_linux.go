package udpgro

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

const (
	// slotSize holds the largest datagram the kernel returns: GRO
	// coalesces up to 64 KiB.
	slotSize = 1 << 16
	// slots is how many datagrams one recvmmsg may return. Coalesced,
	// four are already tens of packets; the buffers cost 256 KiB a socket.
	slots = 4
	// oobSize holds a datagram's control messages: ECN (IP_TOS or
	// IPV6_TCLASS), packet info and the GRO segment size.
	oobSize = 128
)

// Conn is a UDP socket that reads coalesced datagrams and returns them as
// the packets they were sent as. It implements net.PacketConn, quic-go's
// OOBCapablePacketConn and the ReadBatch method quic-go reads with. Writes,
// deadlines, buffer sizes and SyscallConn go to the socket itself, so GSO
// and ECN work as on the bare socket.
//
// Each packet handed out has the sender's address (one *net.UDPAddr shared
// by the packets of a datagram, never changed afterwards) and a copy of the
// datagram's control messages other than the GRO one, so ECN marks and
// packet info arrive as they would without offload.
type Conn struct {
	uc *net.UDPConn
	pc *ipv4.PacketConn // recvmmsg on uc, through the runtime poller

	reads, datagrams, segments atomic.Uint64

	mu   sync.Mutex     // the read state below; held across a blocking read
	msgs []ipv4.Message // the recvmmsg slots
	n    int            // slots filled by the last read
	cur  int            // the slot being split
	off  int            // where its next segment starts
	seg  int            // its segment size
	oob  []byte         // its control messages without UDP_GRO
	one  Single         // ReadFrom and ReadMsgUDP as a batch of one (readOne)
}

// New enables UDP_GRO on uc and returns uc wrapped. It fails, leaving uc
// as it was, when the kernel refuses the option; uc is then best used
// bare. The Conn owns uc: closing it closes uc.
func New(uc *net.UDPConn) (*Conn, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udpgro: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}); err != nil {
		return nil, fmt.Errorf("udpgro: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("udpgro: enable UDP_GRO: %w", serr)
	}
	c := &Conn{uc: uc, pc: ipv4.NewPacketConn(uc), msgs: make([]ipv4.Message, slots)}
	buf := make([]byte, slots*slotSize)
	oob := make([]byte, slots*oobSize)
	for i := range c.msgs {
		c.msgs[i].Buffers = [][]byte{buf[i*slotSize : (i+1)*slotSize : (i+1)*slotSize]}
		c.msgs[i].OOB = oob[i*oobSize : (i+1)*oobSize : (i+1)*oobSize]
	}
	c.one.Mu, c.one.Batch = &c.mu, c.readOne
	return c, nil
}

// Wrap returns pc ready for batched reads with receive offload: a *Conn
// when pc is a *net.UDPConn and the kernel accepts UDP_GRO, pc itself
// otherwise.
func Wrap(pc net.PacketConn) net.PacketConn {
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		return pc
	}
	c, err := New(uc)
	if err != nil {
		return pc
	}
	return c
}

// ReadBatch fills ms with received packets, one per message, and returns
// how many it filled. It blocks only when no packet of an earlier read is
// left; flags go to recvmmsg then. Each message gets the packet in its
// Buffers (truncated, with MSG_TRUNC in Flags, if they are too short), its
// sender in Addr and the datagram's control messages in OOB (those that
// fit, with MSG_CTRUNC if any did not).
func (c *Conn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read(ms, flags)
}

// read is ReadBatch with c.mu held.
func (c *Conn) read(ms []ipv4.Message, flags int) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	if c.cur >= c.n {
		if err := c.fill(flags); err != nil {
			return 0, err
		}
	}
	i := 0
	for ; i < len(ms) && c.cur < c.n; i++ {
		m := &c.msgs[c.cur]
		data := m.Buffers[0][:m.N]
		end := min(c.off+c.seg, len(data))
		put(&ms[i], data[c.off:end], c.oob, m.Addr)
		c.off = end
		if c.off >= len(data) {
			c.cur++
			c.start()
		}
	}
	c.segments.Add(uint64(i))
	return i, nil
}

// fill reads the next datagrams into the slots.
func (c *Conn) fill(flags int) error {
	for i := range c.msgs {
		m := &c.msgs[i]
		m.Buffers[0] = m.Buffers[0][:slotSize]
		m.OOB = m.OOB[:oobSize]
		m.Addr = nil
	}
	n, err := c.pc.ReadBatch(c.msgs, flags)
	if n <= 0 {
		c.n, c.cur = 0, 0
		if err == nil {
			err = syscall.EAGAIN
		}
		return err
	}
	c.n, c.cur = n, 0
	c.reads.Add(1)
	c.datagrams.Add(uint64(n))
	c.start()
	return nil
}

// start prepares the split of slot c.cur, if any: its segment size from
// the UDP_GRO control message (a datagram without one is a single packet)
// and its other control messages, kept in place at the front of its OOB.
func (c *Conn) start() {
	c.off = 0
	if c.cur >= c.n {
		return
	}
	m := &c.msgs[c.cur]
	c.seg = m.N
	rest := m.OOB[:m.NN]
	kept := 0
	for len(rest) > 0 {
		h, body, next, err := ParseControlMessage(rest)
		if err != nil {
			break
		}
		msg := rest[:len(rest)-len(next)]
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO {
			if len(body) >= 4 {
				if s := int(int32(binary.NativeEndian.Uint32(body))); s > 0 {
					c.seg = s
				}
			}
		} else {
			kept += copy(m.OOB[kept:], msg)
		}
		rest = next
	}
	c.oob = m.OOB[:kept]
}

// put writes one packet into m.
func put(m *ipv4.Message, p, oob []byte, addr net.Addr) {
	n := 0
	for _, b := range m.Buffers {
		if n == len(p) {
			break
		}
		n += copy(b, p[n:])
	}
	m.N = n
	m.Flags = 0
	if n < len(p) {
		m.Flags |= unix.MSG_TRUNC
	}
	m.Addr = addr
	if len(oob) <= len(m.OOB) {
		m.NN = copy(m.OOB, oob)
		return
	}
	// Copy the control messages that fit whole.
	m.NN = 0
	for len(oob) > 0 {
		_, _, next, err := ParseControlMessage(oob)
		if err != nil {
			break
		}
		msg := oob[:len(oob)-len(next)]
		if m.NN+len(msg) > len(m.OOB) {
			break
		}
		m.NN += copy(m.OOB[m.NN:], msg)
		oob = next
	}
	m.Flags |= unix.MSG_CTRUNC
}

var errShortControlMessage = errors.New("udpgro: control message shorter than its header")

// ParseControlMessage parses the control message at the start of b, like
// unix.ParseOneSocketControlMessage, but first checks that b holds a whole
// header: x/sys reads the header through a pointer before it checks the
// length, so a shorter b would be read past its end.
func ParseControlMessage(b []byte) (hdr unix.Cmsghdr, data, remainder []byte, err error) {
	if len(b) < unix.SizeofCmsghdr {
		return unix.Cmsghdr{}, nil, nil, errShortControlMessage
	}
	return unix.ParseOneSocketControlMessage(b)
}

// Stats returns what c has read so far.
func (c *Conn) Stats() Stats {
	return Stats{Reads: c.reads.Load(), Datagrams: c.datagrams.Load(), Segments: c.segments.Load()}
}

// ReadFrom reads one packet into b.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) { return c.one.ReadFrom(b) }

// ReadMsgUDP reads one packet into b and its control messages into oob.
func (c *Conn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	return c.one.ReadMsgUDP(b, oob)
}

// readOne is read for ReadFrom and ReadMsgUDP, whose errors are the
// socket's; c.mu is held.
func (c *Conn) readOne(ms []ipv4.Message, flags int) (int, error) {
	n, err := c.read(ms, flags)
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "udp", Source: c.uc.LocalAddr(), Err: err}
	}
	return n, nil
}

// WriteTo writes one datagram to addr.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) { return c.uc.WriteTo(b, addr) }

// WriteMsgUDP writes one datagram, or with a UDP_SEGMENT control message
// a GSO batch, to addr. Unlike the socket's own WriteMsgUDP it does not
// allocate the destination's sockaddr.
func (c *Conn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	return c.uc.WriteMsgUDPAddrPort(b, oob, AddrPort(addr))
}

// AddrPort returns addr as a netip.AddrPort, the zero one for nil (a
// connected socket's writes), so that writes can take the socket's
// allocation-free AddrPort path.
func AddrPort(addr *net.UDPAddr) netip.AddrPort {
	if addr == nil {
		return netip.AddrPort{}
	}
	return addr.AddrPort()
}

// Close closes the socket.
func (c *Conn) Close() error { return c.uc.Close() }

// LocalAddr returns the socket's address.
func (c *Conn) LocalAddr() net.Addr { return c.uc.LocalAddr() }

// SetDeadline sets the socket's read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error { return c.uc.SetDeadline(t) }

// SetReadDeadline sets the socket's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.uc.SetReadDeadline(t) }

// SetWriteDeadline sets the socket's write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.uc.SetWriteDeadline(t) }

// SetReadBuffer sets the socket's receive buffer size.
func (c *Conn) SetReadBuffer(bytes int) error { return c.uc.SetReadBuffer(bytes) }

// SetWriteBuffer sets the socket's send buffer size.
func (c *Conn) SetWriteBuffer(bytes int) error { return c.uc.SetWriteBuffer(bytes) }

// SyscallConn returns the socket's raw connection. Reading through it
// bypasses the splitting: only use it for socket options.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.uc.SyscallConn() }

var _ net.PacketConn = (*Conn)(nil)
