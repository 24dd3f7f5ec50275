package hysteria2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

var errNoUDP = errors.New("server does not relay UDP (Hysteria-UDP: false)")

// ListenPacket opens a UDP session through the server; dst is its first
// destination. The session lives on the Client's QUIC connection and moves
// to the next one when that dies.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	q, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	if !q.udp {
		return nil, fmt.Errorf("hysteria2: UDP to %s via %s: %w", dst, c.srv.Name, errNoUDP)
	}
	pc := &packetConn{c: c, wbuf: make([]byte, 0, 1500)}
	pc.PacketQueue = quicconn.NewPacketQueue(q.QC.LocalAddr(), quicconn.Sender{
		Proto: "hysteria2", Server: c.srv.Name, Encode: appendAddress, Send: pc.sendTo,
	})
	if err := c.udp.Add(pc, func(id uint32) { pc.id = id }); err != nil {
		return nil, fmt.Errorf("hysteria2: UDP to %s via %s: %w", dst, c.srv.Name, err)
	}
	return pc, nil
}

// receiveDatagrams hands q's datagrams to their UDP sessions until q dies.
func (c *Client) receiveDatagrams(q *qconn) {
	var m udpMessage
	quicconn.ReceiveDatagrams(q.QC, func(b []byte) {
		if parseUDPMessage(b, &m) != nil {
			return
		}
		if pc, ok := c.udp.Get(m.SessionID); ok {
			pc.deliver(&m)
		}
	})
}

// packetConn is one UDP session: the net.PacketConn ListenPacket returns.
type packetConn struct {
	*quicconn.PacketQueue // net.PacketConn but Close; WriteTo sends through sendTo; shut by Close or the Client's Close
	c                     *Client
	id                    uint32

	// Receiving side, used by the connection's datagram goroutine.
	rmu     sync.Mutex
	defrag  defragger
	srcRaw  []byte   // last source address as sent by the server
	srcAddr net.Addr // and parsed (a flow.Addr), so a reply allocates nothing

	// Sending side, under the queue's send lock.
	wbuf     []byte
	packetID uint16 // of the last fragmented datagram
}

// deliver queues a message's datagram once it is whole.
func (pc *packetConn) deliver(m *udpMessage) {
	pc.rmu.Lock()
	defer pc.rmu.Unlock()
	payload, ok := pc.defrag.feed(m)
	if !ok {
		return
	}
	if pc.srcAddr == nil || !bytes.Equal(m.Addr, pc.srcRaw) {
		a, err := flow.ParseAddr(string(m.Addr))
		if err != nil {
			return
		}
		pc.srcRaw = append(pc.srcRaw[:0], m.Addr...)
		pc.srcAddr = a
	}
	pc.Deliver(payload, pc.srcAddr)
}

// sendTo sends p to dst, whose address as a message carries it is raw (for
// the queue's WriteTo). A datagram too large for one QUIC datagram is sent
// in fragments.
func (pc *packetConn) sendTo(p []byte, dst flow.Addr, raw []byte) error {
	m := pc.encode(p, raw)
	q, err := pc.c.conns.ForSend(pc.WriteDeadline())
	if err != nil {
		return err
	}
	if !q.udp {
		return fmt.Errorf("hysteria2: UDP to %s via %s: %w", dst, pc.c.srv.Name, errNoUDP)
	}
	err = q.QC.SendDatagram(pc.wbuf)
	if err != nil && !q.Alive() {
		// The connection died since sendConn looked: send on a new one.
		if q, err = pc.c.conns.ForSend(pc.WriteDeadline()); err != nil {
			return err
		}
		if !q.udp {
			return fmt.Errorf("hysteria2: UDP to %s via %s: %w", dst, pc.c.srv.Name, errNoUDP)
		}
		err = q.QC.SendDatagram(pc.wbuf)
	}
	if err != nil {
		var tooLarge *quic.DatagramTooLargeError
		if !errors.As(err, &tooLarge) {
			return fmt.Errorf("hysteria2: UDP to %s via %s: %w", dst, pc.c.srv.Name, err)
		}
		if err := pc.sendFragments(q, &m, int(tooLarge.MaxDatagramPayloadSize)); err != nil {
			return fmt.Errorf("hysteria2: UDP to %s via %s: %w", dst, pc.c.srv.Name, err)
		}
	}
	return nil
}

// encode writes the message carrying p to the destination raw into
// pc.wbuf and returns it.
func (pc *packetConn) encode(p, raw []byte) udpMessage {
	m := udpMessage{SessionID: pc.id, FragCount: 1, Addr: raw, Payload: p}
	pc.wbuf = appendUDPMessage(pc.wbuf[:0], &m)
	return m
}

// appendAddress appends dst as a UDP message carries it: "host:port".
func appendAddress(b []byte, dst flow.Addr) ([]byte, error) {
	s := dst.String()
	if len(s) > maxAddressLen {
		return b, errAddressTooLong
	}
	return append(b, s...), nil
}

// sendFragments sends m's payload in fragments of at most maxSize bytes.
func (pc *packetConn) sendFragments(q *qconn, m *udpMessage, maxSize int) error {
	chunk, count, err := quicconn.FragmentPlan(m.headerLen(), len(m.Payload), maxSize)
	if err != nil {
		return err
	}
	pc.packetID++
	if pc.packetID == 0 {
		pc.packetID = 1
	}
	for i := range count {
		f := fragment(m, pc.packetID, chunk, count, i)
		pc.wbuf = appendUDPMessage(pc.wbuf[:0], &f)
		if err := q.QC.SendDatagram(pc.wbuf); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the session. The protocol has no message for that: the
// server forgets idle sessions.
func (pc *packetConn) Close() error {
	pc.c.udp.Remove(pc.id, func(s *packetConn) bool { return s == pc })
	pc.Shut()
	return nil
}
