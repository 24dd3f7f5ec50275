package hysteria2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// Port hopping settings, as the reference client's.
const (
	// DefaultHopInterval is how often an open connection moves to a new
	// server port when the node does not say.
	DefaultHopInterval = 30 * time.Second
	// MinHopInterval is the shortest hop interval: a shorter one is raised
	// to it.
	MinHopInterval = 5 * time.Second
)

const (
	// hopQueueLen is how many received packets wait for quic-go at most;
	// more are dropped, as a full socket buffer would.
	hopQueueLen = 256
	// hopPacketSize holds quic-go's largest packet (1452 bytes) with
	// Salamander's salt, with room to spare; a longer datagram arrives
	// truncated, fails decryption and is dropped.
	hopPacketSize = 2048
)

// errHopClosed is returned by a closed hopConn.
var errHopClosed = errors.New("hysteria2: hopping socket closed")

// hopPacket is one received packet.
type hopPacket struct {
	buf *[]byte
	n   int
}

// hopConn is the socket of a connection to a multi-port server, as in the
// reference client: a net.PacketConn for quic-go that owns a current UDP
// socket and the previous one. It sends every packet from the current
// socket to the current server port, whatever address quic-go names, and
// reports every packet as coming from the address quic-go dialled. hop
// opens a new socket (new source port) to a new server port; the previous
// socket keeps receiving what was already in flight until the next hop
// closes it. The server sees its client change address, validates the new
// path and answers there; the QUIC connection and its streams go on.
//
// quic-go's QUIC-level migration (Conn.AddPath) is not used: in v0.65 a
// connection stays registered with every Transport it ever used, and
// closing any of them (or its socket) destroys the connection, so each hop
// would keep a socket and a goroutine for the connection's lifetime. It
// also resets the congestion state on each switch.
type hopConn struct {
	open   func(ctx context.Context) (net.PacketConn, error)
	ip     netip.Addr
	ports  portSet
	remote net.Addr // what reads report: the address quic-go dialled

	recv   chan hopPacket
	done   chan struct{} // closed by Close
	pool   sync.Pool     // *[]byte of hopPacketSize
	wg     sync.WaitGroup
	rdl    quicconn.Deadline
	closer sync.Once

	mu      sync.RWMutex
	cur     net.PacketConn
	curUDP  *net.UDPConn // cur, when it is one: writes without allocating
	curAddr *net.UDPAddr
	prev    net.PacketConn
	rbuf    int // SetReadBuffer's size, for the next sockets; 0 unset
	wbuf    int
	closed  bool
}

// newHopConn opens the first socket with open, to a port of ports picked
// at random; remote is the address quic-go will dial.
func newHopConn(ctx context.Context, open func(context.Context) (net.PacketConn, error), ip netip.Addr, ports portSet, remote net.Addr) (*hopConn, error) {
	h := &hopConn{
		open:   open,
		ip:     ip,
		ports:  ports,
		remote: remote,
		recv:   make(chan hopPacket, hopQueueLen),
		done:   make(chan struct{}),
		rdl:    quicconn.MakeDeadline(),
	}
	h.pool.New = func() any { b := make([]byte, hopPacketSize); return &b }
	if err := h.hop(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// port returns the server port packets go to now.
func (h *hopConn) port() uint16 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return uint16(h.curAddr.Port)
}

// hop moves sending to a new socket and a server port other than the
// current one (when the set has another), and closes the socket before the
// current one.
func (h *hopConn) hop(ctx context.Context) error {
	h.mu.RLock()
	old := h.curAddr
	h.mu.RUnlock()
	port := h.ports.pick()
	for i := 0; old != nil && port == uint16(old.Port) && i < 8; i++ {
		port = h.ports.pick()
	}
	addr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(h.ip, port))
	sock, err := h.open(ctx)
	if err != nil {
		return fmt.Errorf("hysteria2: hop to %s: open UDP socket: %w", addr, err)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		sock.Close()
		return errHopClosed
	}
	setBuffers(sock, h.rbuf, h.wbuf)
	stale := h.prev
	h.prev, h.cur, h.curAddr = h.cur, sock, addr
	h.curUDP, _ = sock.(*net.UDPConn)
	h.wg.Add(1)
	h.mu.Unlock()
	go h.receive(sock)
	if stale != nil {
		stale.Close()
	}
	return nil
}

// receive queues the packets of sock until it is closed.
func (h *hopConn) receive(sock net.PacketConn) {
	defer h.wg.Done()
	read := func(b []byte) (int, error) { n, _, err := sock.ReadFrom(b); return n, err }
	if uc, ok := sock.(*net.UDPConn); ok {
		// The sender is not needed, and ReadFrom would allocate it.
		read = func(b []byte) (int, error) { n, _, err := uc.ReadFromUDPAddrPort(b); return n, err }
	}
	for {
		b := h.pool.Get().(*[]byte)
		n, err := read(*b)
		if err != nil {
			h.pool.Put(b)
			if errors.Is(err, net.ErrClosed) || !h.owns(sock) {
				return
			}
			continue // a transient error (an ICMP report): go on reading
		}
		select {
		case h.recv <- hopPacket{b, n}:
		case <-h.done:
			h.pool.Put(b)
			return
		default:
			h.pool.Put(b) // quic-go is behind: drop, as a full socket buffer would
		}
	}
}

// owns reports whether sock is still the current or the previous socket.
func (h *hopConn) owns(sock net.PacketConn) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return !h.closed && (sock == h.cur || sock == h.prev)
}

// ReadFrom returns the next packet from either socket, as sent by the
// address quic-go dialled.
func (h *hopConn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case pk := <-h.recv:
		n := copy(p, (*pk.buf)[:pk.n])
		h.pool.Put(pk.buf)
		return n, h.remote, nil
	case <-h.done:
		return 0, nil, net.ErrClosed
	case <-h.rdl.Wait():
		return 0, nil, os.ErrDeadlineExceeded
	}
}

// WriteTo sends p from the current socket to the current server port.
func (h *hopConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	h.mu.RLock()
	sock, uc, addr := h.cur, h.curUDP, h.curAddr
	h.mu.RUnlock()
	if uc != nil {
		return uc.WriteToUDPAddrPort(p, addr.AddrPort())
	}
	return sock.WriteTo(p, addr)
}

// Close closes both sockets; reads then fail.
func (h *hopConn) Close() error {
	h.closer.Do(func() {
		h.mu.Lock()
		h.closed = true
		cur, prev := h.cur, h.prev
		h.mu.Unlock()
		close(h.done)
		cur.Close()
		if prev != nil {
			prev.Close()
		}
		h.wg.Wait()
	})
	return nil
}

// LocalAddr returns the current socket's address.
func (h *hopConn) LocalAddr() net.Addr {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cur.LocalAddr()
}

// SetDeadline sets the read deadline; writes do not block.
func (h *hopConn) SetDeadline(t time.Time) error { return h.SetReadDeadline(t) }

// SetReadDeadline sets the deadline of ReadFrom: quic-go sets it to stop
// its reader when its Transport closes.
func (h *hopConn) SetReadDeadline(t time.Time) error { h.rdl.Set(t); return nil }

// SetWriteDeadline does nothing: writes go to a UDP socket and do not
// block.
func (h *hopConn) SetWriteDeadline(time.Time) error { return nil }

// SetReadBuffer sizes the receive buffer of the current socket and of
// those opened by later hops, as quic-go does for a bare socket.
func (h *hopConn) SetReadBuffer(n int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rbuf = n
	return setBuffers(h.cur, n, 0)
}

// SetWriteBuffer sizes the send buffer of the current socket and of those
// opened by later hops.
func (h *hopConn) SetWriteBuffer(n int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wbuf = n
	return setBuffers(h.cur, 0, n)
}

// setBuffers sets the socket's buffer sizes that are not 0, when it is a
// UDP socket.
func setBuffers(sock net.PacketConn, rbuf, wbuf int) error {
	uc, ok := sock.(*net.UDPConn)
	if !ok {
		return nil
	}
	if rbuf > 0 {
		if err := uc.SetReadBuffer(rbuf); err != nil {
			return err
		}
	}
	if wbuf > 0 {
		return uc.SetWriteBuffer(wbuf)
	}
	return nil
}
