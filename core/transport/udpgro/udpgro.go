// Package udpgro lets a QUIC stack read many packets per system call. It
// wraps a UDP socket, asks the kernel for UDP generic receive offload
// (UDP_GRO on Linux), so that a run of packets from one sender arrives as
// one coalesced datagram, reads with recvmmsg into a few large buffers, and
// splits the coalesced datagrams back into single packets for the caller.
//
// quic-go reads a socket in batches through a ReadBatch method when the
// socket has one, and keeps sending with GSO and ECN as long as the socket
// is an OOBCapablePacketConn whose SyscallConn is the real socket. A Conn
// is both, so wrapping the *net.UDPConn an outbound hands to quic-go keeps
// its fast path and cuts the reads (and, since quic-go then handles more
// packets per wake-up, the ACKs it sends) per byte received.
//
// Where the kernel has no UDP_GRO (or on other systems) Wrap returns the
// socket as it was.
package udpgro

import (
	"net"
	"sync"

	"golang.org/x/net/ipv4"
)

// Stats counts what a Conn read. Datagrams and Segments differ only when
// the kernel coalesced packets.
type Stats struct {
	Reads     uint64 // recvmmsg calls that returned datagrams
	Datagrams uint64 // datagrams the kernel returned, coalesced or not
	Segments  uint64 // packets handed to the caller after splitting
}

// Single serves ReadFrom and ReadMsgUDP from a batch read: it reads one
// packet as a batch of one with Batch, holding Mu, the lock that Batch's
// state needs. Set both before the first read. Its buffers are scratch
// space that Mu guards.
type Single struct {
	Mu    *sync.Mutex
	Batch func(ms []ipv4.Message, flags int) (int, error)

	msg [1]ipv4.Message
	buf [1][]byte
}

// ReadFrom reads one packet into b.
func (s *Single) ReadFrom(b []byte) (int, net.Addr, error) {
	n, _, _, addr, err := s.read(b, nil)
	return n, addr, err
}

// ReadMsgUDP reads one packet into b and its control messages into oob.
func (s *Single) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	n, oobn, flags, a, err := s.read(b, oob)
	addr, _ = a.(*net.UDPAddr)
	return n, oobn, flags, addr, err
}

func (s *Single) read(b, oob []byte) (n, oobn, flags int, addr net.Addr, err error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	m := &s.msg[0]
	s.buf[0] = b
	m.Buffers, m.OOB = s.buf[:], oob
	_, err = s.Batch(s.msg[:], 0)
	n, oobn, flags, addr = m.N, m.NN, m.Flags, m.Addr
	s.buf[0], m.OOB, m.Addr = nil, nil, nil // keep no reference to the caller's memory
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return n, oobn, flags, addr, nil
}
