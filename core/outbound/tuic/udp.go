package tuic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// maxStreamPacket bounds a Packet command read from a unidirectional
// stream: the header with the longest address and a full datagram.
const maxStreamPacket = packetHeaderFixed + 1 + 1 + 255 + 2 + 0xffff

// ListenPacket opens a UDP session (an association) through the server;
// dst is its first destination. The session lives on the Client's QUIC
// connection and moves to the next one when that dies.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	q, err := c.conns.Get(ctx)
	if err != nil {
		return nil, err
	}
	pc := &packetConn{c: c, wbuf: make([]byte, 0, 1500)}
	pc.PacketQueue = quicconn.NewPacketQueue(q.QC.LocalAddr(), quicconn.Sender{
		Proto: "tuic", Server: c.srv.Name, Encode: appendAddr, Send: pc.sendTo,
	})
	if err := c.udp.Add(pc, func(id uint16) { pc.id = id }); err != nil {
		return nil, fmt.Errorf("tuic: UDP to %s via %s: %w", dst, c.srv.Name, err)
	}
	return pc, nil
}

// receiveDatagrams hands q's datagrams to their UDP sessions until q dies.
func (c *Client) receiveDatagrams(q *qconn) {
	var p packet
	quicconn.ReceiveDatagrams(q.QC, func(b []byte) {
		q.heard.Store(true)
		if parsePacket(b, &p) == nil { // not a heartbeat, nor garbage
			c.deliver(&p)
		}
	})
}

// receiveStreams reads the Packet commands the server sends on
// unidirectional streams (udp_relay_mode quic) until q dies.
func (c *Client) receiveStreams(q *qconn) {
	ctx := q.QC.Context()
	for {
		st, err := q.QC.AcceptUniStream(ctx)
		if err != nil {
			return
		}
		q.heard.Store(true)
		c.conns.Go(func() {
			defer q.Panics.Recover("tuic packet stream")
			b, err := io.ReadAll(io.LimitReader(st, maxStreamPacket+1))
			if err != nil || len(b) > maxStreamPacket {
				st.CancelRead(0)
				return
			}
			var p packet
			if parsePacket(b, &p) == nil {
				c.deliver(&p)
			}
		})
	}
}

// deliver hands a packet (or a fragment) to its session.
func (c *Client) deliver(p *packet) {
	if pc, ok := c.udp.Get(p.Assoc); ok {
		pc.deliver(p)
	}
}

// packetConn is one UDP session: the net.PacketConn ListenPacket returns.
type packetConn struct {
	*quicconn.PacketQueue // net.PacketConn but Close; WriteTo sends through sendTo
	c                     *Client
	id                    uint16

	// Receiving side, used by the connection's readers.
	rmu     sync.Mutex
	defrag  quicconn.Defragger
	srcFlow flow.Addr // source of the packet being received
	srcAddr net.Addr  // srcFlow boxed once, so that a reply allocates nothing

	// Sending side, under the queue's send lock.
	wbuf     []byte
	packetID uint16
}

// deliver queues a packet's datagram once it is whole.
func (pc *packetConn) deliver(p *packet) {
	pc.rmu.Lock()
	defer pc.rmu.Unlock()
	if p.Addr.IsValid() && (pc.srcAddr == nil || p.Addr != pc.srcFlow) {
		pc.srcFlow, pc.srcAddr = p.Addr, p.Addr
	}
	payload, ok := pc.defrag.Feed(p.PacketID, p.FragID, p.FragTotal, p.Payload)
	if !ok || pc.srcAddr == nil {
		return
	}
	pc.Deliver(payload, pc.srcAddr)
}

// sendTo sends p to dst, whose address as a packet carries it is raw (for
// the queue's WriteTo). In native mode a datagram too large for one QUIC
// datagram is sent in fragments.
func (pc *packetConn) sendTo(p []byte, dst flow.Addr, raw []byte) error {
	pc.packetID++
	m := packet{Assoc: pc.id, PacketID: pc.packetID, FragTotal: 1, Payload: p}
	q, err := pc.c.conns.ForSend(pc.WriteDeadline())
	if err != nil {
		return err
	}
	err = pc.send(q, &m, raw)
	if err != nil && !q.Alive() {
		// The connection died since sendConn looked: send on a new one.
		if q, err = pc.c.conns.ForSend(pc.WriteDeadline()); err != nil {
			return err
		}
		err = pc.send(q, &m, raw)
	}
	if err != nil {
		return fmt.Errorf("tuic: UDP to %s via %s: %w", dst, pc.c.srv.Name, pc.c.explain(q, err))
	}
	return nil
}

// send sends m on q, to the destination encoded as raw, in the client's
// relay mode; the queue's send lock is held.
func (pc *packetConn) send(q *qconn, m *packet, raw []byte) error {
	pc.wbuf = append(appendPacketHeader(pc.wbuf[:0], m, raw), m.Payload...)
	if pc.c.udpMode == modeQUIC {
		st, err := q.QC.OpenUniStream()
		if err != nil {
			return err
		}
		if _, err := st.Write(pc.wbuf); err != nil {
			st.CancelWrite(0)
			return err
		}
		return st.Close()
	}
	err := q.QC.SendDatagram(pc.wbuf)
	var tooLarge *quic.DatagramTooLargeError
	if !errors.As(err, &tooLarge) {
		return err
	}
	chunk, count, err := quicconn.FragmentPlan(packetHeaderFixed+len(raw), len(m.Payload), int(tooLarge.MaxDatagramPayloadSize))
	if err != nil {
		return err
	}
	for i := range count {
		f := *m
		f.FragTotal, f.FragID = uint8(count), uint8(i)
		f.Payload = m.Payload[i*chunk : min((i+1)*chunk, len(m.Payload))]
		pc.wbuf = append(appendPacketHeader(pc.wbuf[:0], &f, raw), f.Payload...)
		if err := q.QC.SendDatagram(pc.wbuf); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the session and tells the server (Dissociate).
func (pc *packetConn) Close() error {
	pc.c.udp.Remove(pc.id, func(s *packetConn) bool { return s == pc })
	if !pc.Closed() {
		if q, ok := pc.c.conns.Current(); ok {
			if st, err := q.QC.OpenUniStream(); err == nil {
				st.Write(appendDissociate(make([]byte, 0, 4), pc.id))
				st.Close()
			}
		}
	}
	pc.Shut()
	return nil
}
