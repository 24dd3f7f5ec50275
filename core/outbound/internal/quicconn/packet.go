package quicconn

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// PacketQueue is the receiving half of a proxied UDP session: the
// connection's reader delivers whole datagrams, ReadFrom takes them. A
// full queue drops, as a full socket buffer would. It also keeps the
// session's write deadline, for the protocol's sending half, and its
// local address.
type PacketQueue struct {
	recv     chan queued
	done     chan struct{} // closed by Shut
	doneOnce sync.Once
	rdline   Deadline
	local    net.Addr

	wmu sync.Mutex
	wdl time.Time // the write deadline, for the sending half (WriteDeadline)
}

type queued struct {
	data []byte
	from net.Addr
}

// queueLen is how many datagrams a session holds for its reader.
const queueLen = 128

// NewPacketQueue returns an empty queue for a session on the QUIC socket
// whose address is local.
func NewPacketQueue(local net.Addr) *PacketQueue {
	return &PacketQueue{recv: make(chan queued, queueLen), done: make(chan struct{}), rdline: MakeDeadline(), local: local}
}

// LocalAddr returns the QUIC socket's address at the time the session
// opened.
func (q *PacketQueue) LocalAddr() net.Addr { return q.local }

// Deliver queues a datagram from from; data must not be reused by the
// caller.
func (q *PacketQueue) Deliver(data []byte, from net.Addr) {
	select {
	case q.recv <- queued{data: data, from: from}:
	default: // the reader is behind: drop
	}
}

// ReadFrom reads the next datagram.
func (q *PacketQueue) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case <-q.done:
		return 0, nil, net.ErrClosed
	default:
	}
	select {
	case u := <-q.recv:
		return copy(p, u.data), u.from, nil
	case <-q.done:
		return 0, nil, net.ErrClosed
	case <-q.rdline.Wait():
		return 0, nil, os.ErrDeadlineExceeded
	}
}

// Shut wakes the readers and makes further reads fail.
func (q *PacketQueue) Shut() {
	q.doneOnce.Do(func() {
		close(q.done)
		q.rdline.Set(time.Time{})
	})
}

// Closed reports whether Shut was called.
func (q *PacketQueue) Closed() bool {
	select {
	case <-q.done:
		return true
	default:
		return false
	}
}

// SetDeadline sets the read and the write deadline.
func (q *PacketQueue) SetDeadline(t time.Time) error {
	q.SetReadDeadline(t)
	return q.SetWriteDeadline(t)
}

// SetWriteDeadline sets the deadline that WriteDeadline reports: the
// session's sending half bounds its wait for a new connection by it
// (Shared.ForSend). A send already waiting keeps the deadline it had.
func (q *PacketQueue) SetWriteDeadline(t time.Time) error {
	q.wmu.Lock()
	q.wdl = t
	q.wmu.Unlock()
	return nil
}

// WriteDeadline is the deadline SetWriteDeadline set; zero: none.
func (q *PacketQueue) WriteDeadline() time.Time {
	q.wmu.Lock()
	defer q.wmu.Unlock()
	return q.wdl
}

// SetReadDeadline makes ReadFrom fail with os.ErrDeadlineExceeded after t.
func (q *PacketQueue) SetReadDeadline(t time.Time) error {
	q.rdline.Set(t)
	return nil
}

// Dest is a UDP session's last destination and its wire form, kept so
// that a session talking to one peer encodes the address once.
type Dest struct {
	addr flow.Addr
	raw  []byte
}

// Encode returns dst's wire form: the last one when dst was the last
// destination, else what enc appends to the last one's buffer, emptied
// (an enc that fails must not have written to it). The caller serialises
// its calls.
func (d *Dest) Encode(dst flow.Addr, enc func([]byte, flow.Addr) ([]byte, error)) ([]byte, error) {
	if d.raw == nil || dst != d.addr {
		raw, err := enc(d.raw[:0], dst)
		if err != nil {
			return nil, err
		}
		d.addr, d.raw = dst, raw
	}
	return d.raw, nil
}

// Target checks a session's WriteTo of p to addr: it returns addr as a
// flow.Addr (without a call for the two kinds a relay passes), net.ErrClosed
// once q is shut, and an error for a datagram over MaxUDPPacket bytes.
// Errors start with proto and name the server.
func (q *PacketQueue) Target(proto, server string, p []byte, addr net.Addr) (flow.Addr, error) {
	var dst flow.Addr
	switch a := addr.(type) {
	case flow.Addr:
		dst = a
	case *net.UDPAddr:
		dst = flow.AddrFromAddrPort(a.AddrPort())
	default:
		var err error
		if dst, err = flow.AddrFromNet(addr); err != nil {
			return flow.Addr{}, fmt.Errorf("%s: UDP via %s: %w", proto, server, err)
		}
	}
	if q.Closed() {
		return flow.Addr{}, net.ErrClosed
	}
	if len(p) > MaxUDPPacket {
		return flow.Addr{}, fmt.Errorf("%s: UDP to %s via %s: datagram of %d bytes", proto, dst, server, len(p))
	}
	return dst, nil
}
