package quicconn

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// PacketQueue is what the protocols' proxied UDP sessions share: all of
// net.PacketConn but Close. Its receiving half is a queue: the
// connection's reader delivers whole datagrams, ReadFrom takes them, and a
// full queue drops, as a full socket buffer would. Its WriteTo checks a
// datagram and its destination, encodes the destination (once while it
// stays the same) and hands both to the protocol's Sender, one write at a
// time. It also keeps the session's deadlines and local address.
type PacketQueue struct {
	recv     chan queued
	done     chan struct{} // closed by Shut
	doneOnce sync.Once
	rdline   Deadline
	local    net.Addr

	wmu sync.Mutex
	wdl time.Time // the write deadline, for the sending half (WriteDeadline)

	out  Sender
	smu  sync.Mutex // held through each WriteTo: the protocol's sending state is under it
	dest Dest
}

// Sender is a protocol's sending half of a UDP session, for WriteTo.
type Sender struct {
	Proto, Server string // start and name WriteTo's errors: "tuic", "host:port"

	// Encode appends dst's wire form to b; one that fails must not have
	// written to b.
	Encode func(b []byte, dst flow.Addr) ([]byte, error)
	// Send sends p to dst, whose wire form is raw, under the session's
	// send lock (one write at a time); its errors are WriteTo's as they
	// are.
	Send func(p []byte, dst flow.Addr, raw []byte) error
}

type queued struct {
	data []byte
	from net.Addr
}

// queueLen is how many datagrams a session holds for its reader.
const queueLen = 128

// NewPacketQueue returns an empty queue for a session on the QUIC socket
// whose address is local, which sends through out.
func NewPacketQueue(local net.Addr, out Sender) *PacketQueue {
	return &PacketQueue{recv: make(chan queued, queueLen), done: make(chan struct{}), rdline: MakeDeadline(), local: local, out: out}
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
func (q *PacketQueue) Closed() bool { return isClosed(q.done) }

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

// WriteTo sends p to addr (a flow.Addr, *net.UDPAddr or anything
// flow.AddrFromNet takes) through the protocol's Sender.
func (q *PacketQueue) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, err := q.target(p, addr)
	if err != nil {
		return 0, err
	}
	q.smu.Lock()
	defer q.smu.Unlock()
	raw, err := q.dest.Encode(dst, q.out.Encode)
	if err != nil {
		return 0, fmt.Errorf("%s: UDP via %s: %w", q.out.Proto, q.out.Server, err)
	}
	if err := q.out.Send(p, dst, raw); err != nil {
		return 0, err
	}
	return len(p), nil
}

// target checks a WriteTo of p to addr: it returns addr as a flow.Addr
// (without a call for the two kinds a relay passes), net.ErrClosed once q
// is shut, and an error for a datagram over MaxUDPPacket bytes.
func (q *PacketQueue) target(p []byte, addr net.Addr) (flow.Addr, error) {
	proto, server := q.out.Proto, q.out.Server
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
