package netstack

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
)

// udpQueueLen bounds the datagrams from the app waiting for the handler of
// one session; beyond it they are dropped, as a full socket buffer drops.
const udpQueueLen = 256

// Datagram buffers come from two pools: most datagrams fit a small one.
const (
	smallDatagram = 2048
	largeDatagram = 65535
)

var (
	smallPool = sync.Pool{New: func() any { b := make([]byte, smallDatagram); return &b }}
	largePool = sync.Pool{New: func() any { b := make([]byte, largeDatagram); return &b }}
)

func getBuf(n int) *[]byte {
	if n <= smallDatagram {
		return smallPool.Get().(*[]byte)
	}
	return largePool.Get().(*[]byte)
}

func putBuf(b *[]byte) {
	if cap(*b) == smallDatagram {
		smallPool.Put(b)
	} else {
		largePool.Put(b)
	}
}

// udpKey names a session: the app's address and the destination it sent to.
// A session per destination (rather than per app port) lets the engine route
// each destination on its own.
type udpKey struct {
	src, dst netip.AddrPort
}

// udpTable is the NAT table of UDP sessions. gVisor calls handlePacket for
// every UDP datagram (no gVisor endpoint is ever bound), from the link
// endpoint's single reader goroutine.
type udpTable struct {
	n *Stack

	mu       sync.Mutex
	sessions map[udpKey]*udpSession
	closed   bool
	w        sliceWriter // reused to copy payloads; guarded by mu
}

func newUDPTable(n *Stack) *udpTable {
	return &udpTable{n: n, sessions: make(map[udpKey]*udpSession)}
}

// sliceWriter copies into a byte slice; an io.Writer for PacketData.ReadTo.
type sliceWriter struct {
	b []byte
	n int
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	n := copy(w.b[w.n:], p)
	w.n += n
	return n, nil
}

func (t *udpTable) handlePacket(id stack.TransportEndpointID, pkt *stack.PacketBuffer) bool {
	key := udpKey{
		src: addrPort(id.RemoteAddress, id.RemotePort),
		dst: addrPort(id.LocalAddress, id.LocalPort),
	}
	size := pkt.Data().Size()
	if size > largeDatagram || !key.dst.Addr().IsValid() || !key.src.Addr().IsValid() {
		return true
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return true
	}
	s, ok := t.sessions[key]
	if !ok {
		s = newUDPSession(t, key)
		t.sessions[key] = s
	}
	buf := getBuf(size)
	t.w = sliceWriter{b: *buf}
	pkt.Data().ReadTo(&t.w, true)
	n := t.w.n
	t.w = sliceWriter{}
	t.mu.Unlock()

	s.touch()
	select {
	case s.in <- datagram{buf: buf, n: n}:
	default:
		putBuf(buf) // the handler is not keeping up: drop
	}
	if !ok {
		t.n.wg.Add(1)
		go func() {
			defer t.n.wg.Done()
			m := flow.Metadata{
				Network:     flow.UDP,
				Source:      key.src,
				Destination: flow.AddrFromAddrPort(key.dst),
				Inbound:     "tun",
			}
			err := guard.Do(t.n.ctx, "tun udp session", func() error { return t.n.handler.HandlePacket(t.n.ctx, m, s) })
			if err != nil {
				t.n.log.Debug("netstack: udp session", "src", m.Source, "dst", m.Destination, "err", err)
			}
			s.Close()
		}()
	}
	return true
}

func (t *udpTable) remove(s *udpSession) {
	t.mu.Lock()
	if t.sessions[s.key] == s {
		delete(t.sessions, s.key)
	}
	t.mu.Unlock()
}

func (t *udpTable) closeAll() {
	t.mu.Lock()
	t.closed = true
	all := make([]*udpSession, 0, len(t.sessions))
	for _, s := range t.sessions {
		all = append(all, s)
	}
	t.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
}

type datagram struct {
	buf *[]byte
	n   int
}

// udpSession is the app's side of one UDP session, as a net.PacketConn:
// ReadFrom yields the app's datagrams with their original destination,
// WriteTo sends a reply to the app that appears to come from the address
// given, so replies from other addresses than the destination (full-cone
// NAT, STUN) reach the app too.
type udpSession struct {
	t       *udpTable
	key     udpKey
	dstAddr net.Addr // key.dst as a flow.Addr, boxed once
	srcAddr net.Addr

	in     chan datagram
	done   chan struct{}
	once   sync.Once
	last   atomic.Int64 // unix nanoseconds of the last datagram either way
	idle   *time.Timer
	rdMu   sync.Mutex
	rdLine time.Time
	rdWake chan struct{} // closed and replaced when the read deadline changes
}

var _ net.PacketConn = (*udpSession)(nil)

func newUDPSession(t *udpTable, key udpKey) *udpSession {
	s := &udpSession{
		t:       t,
		key:     key,
		dstAddr: flow.AddrFromAddrPort(key.dst),
		srcAddr: flow.AddrFromAddrPort(key.src),
		in:      make(chan datagram, udpQueueLen),
		done:    make(chan struct{}),
		rdWake:  make(chan struct{}),
	}
	s.touch()
	timeout := t.n.opts.UDPTimeout
	s.idle = time.AfterFunc(timeout, func() {
		if rest := timeout - time.Since(time.Unix(0, s.last.Load())); rest > 0 {
			s.idle.Reset(rest)
			return
		}
		s.Close()
	})
	return s
}

func (s *udpSession) touch() { s.last.Store(time.Now().UnixNano()) }

// ReadFrom returns the app's next datagram and its original destination.
func (s *udpSession) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		s.rdMu.Lock()
		deadline, wake := s.rdLine, s.rdWake
		s.rdMu.Unlock()
		var timeout <-chan time.Time
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return 0, nil, os.ErrDeadlineExceeded
			}
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case d := <-s.in:
			n := copy(p, (*d.buf)[:d.n])
			putBuf(d.buf)
			return n, s.dstAddr, nil
		case <-s.done:
			return 0, nil, net.ErrClosed
		case <-timeout:
			return 0, nil, os.ErrDeadlineExceeded
		case <-wake:
		}
	}
}

// WriteTo sends p to the app as a datagram from addr. An addr that is not an
// IP address of the app's family (a domain name, say) stands for the
// session's original destination.
func (s *udpSession) WriteTo(p []byte, addr net.Addr) (int, error) {
	select {
	case <-s.done:
		return 0, net.ErrClosed
	default:
	}
	from := s.key.dst
	if a, err := flow.AddrFromNet(addr); err == nil && a.IP.IsValid() && a.IP.Is4() == from.Addr().Is4() {
		from = netip.AddrPortFrom(a.IP, a.Port)
	}
	if err := s.t.n.writeUDP(from, s.key.src, p); err != nil {
		return 0, err
	}
	s.touch()
	return len(p), nil
}

// Close ends the session; the handler's ReadFrom returns net.ErrClosed.
func (s *udpSession) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.idle.Stop()
		s.t.remove(s)
		for {
			select {
			case d := <-s.in:
				putBuf(d.buf)
			default:
				return
			}
		}
	})
	return nil
}

// LocalAddr returns the session's original destination.
func (s *udpSession) LocalAddr() net.Addr { return s.dstAddr }

// RemoteAddr returns the app's address.
func (s *udpSession) RemoteAddr() net.Addr { return s.srcAddr }

// SetDeadline sets the read deadline; writes never block.
func (s *udpSession) SetDeadline(t time.Time) error { return s.SetReadDeadline(t) }

// SetReadDeadline implements net.PacketConn.
func (s *udpSession) SetReadDeadline(t time.Time) error {
	s.rdMu.Lock()
	s.rdLine = t
	close(s.rdWake)
	s.rdWake = make(chan struct{})
	s.rdMu.Unlock()
	return nil
}

// SetWriteDeadline implements net.PacketConn; writes never block.
func (s *udpSession) SetWriteDeadline(time.Time) error { return nil }

var errUDPTooLarge = errors.New("netstack: UDP datagram too large")

// writeUDP builds an IP/UDP packet from src to dst around payload and writes
// it to the device through the stack's NIC.
func (n *Stack) writeUDP(src, dst netip.AddrPort, payload []byte) error {
	v4 := src.Addr().Is4()
	ipLen := header.IPv6MinimumSize
	proto := header.IPv6ProtocolNumber
	if v4 {
		ipLen = header.IPv4MinimumSize
		proto = header.IPv4ProtocolNumber
	}
	total := ipLen + header.UDPMinimumSize + len(payload)
	if total > largeDatagram {
		return errUDPTooLarge
	}
	bp := largePool.Get().(*[]byte)
	defer largePool.Put(bp)
	b := (*bp)[:total]
	srcA := tcpip.AddrFromSlice(src.Addr().AsSlice())
	dstA := tcpip.AddrFromSlice(dst.Addr().AsSlice())
	udpLen := uint16(header.UDPMinimumSize + len(payload))
	if v4 {
		n.encodeIPv4(b, total, header.UDPProtocolNumber, srcA, dstA)
	} else {
		encodeIPv6(b, int(udpLen), header.UDPProtocolNumber, srcA, dstA)
	}
	u := header.UDP(b[ipLen:])
	u.Encode(&header.UDPFields{SrcPort: src.Port(), DstPort: dst.Port(), Length: udpLen})
	copy(b[ipLen+header.UDPMinimumSize:], payload)
	xsum := header.PseudoHeaderChecksum(header.UDPProtocolNumber, srcA, dstA, udpLen)
	xsum = checksum.Checksum(payload, xsum)
	c := ^u.CalculateChecksum(xsum)
	if c == 0 {
		c = 0xffff
	}
	u.SetChecksum(c)
	if err := n.s.WriteRawPacket(nicID, proto, buffer.MakeWithData(b)); err != nil {
		return errors.New("netstack: write UDP reply: " + err.String())
	}
	return nil
}

// encodeIPv4 writes the IPv4 header of a packet the stack sends itself (a
// UDP reply, an echo reply) at the start of b, checksum included.
func (n *Stack) encodeIPv4(b []byte, total int, proto tcpip.TransportProtocolNumber, src, dst tcpip.Address) {
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(total),
		ID:          uint16(n.ipID.Add(1)),
		TTL:         64,
		Protocol:    uint8(proto),
		SrcAddr:     src,
		DstAddr:     dst,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
}

// encodeIPv6 writes the IPv6 header of a packet the stack sends itself at
// the start of b, as encodeIPv4 does for IPv4.
func encodeIPv6(b []byte, payloadLen int, proto tcpip.TransportProtocolNumber, src, dst tcpip.Address) {
	header.IPv6(b).Encode(&header.IPv6Fields{
		PayloadLength:     uint16(payloadLen),
		TransportProtocol: proto,
		HopLimit:          64,
		SrcAddr:           src,
		DstAddr:           dst,
	})
}
