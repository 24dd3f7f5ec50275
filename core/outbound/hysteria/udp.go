package hysteria

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// ListenPacket opens a UDP session through the server; dst is its first
// destination. It asks the server for a session at once, so a server
// that relays no UDP is an error here. The session moves to the Client's
// next connection when the one it is on dies, with a new ID.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	q, err := c.conns.Get(ctx)
	if err != nil {
		return nil, err
	}
	pc := &packetConn{c: c, wbuf: make([]byte, 0, 1500)}
	pc.PacketQueue = quicconn.NewPacketQueue(q.QC.LocalAddr(), quicconn.Sender{
		Proto: "hysteria", Server: c.srv.Name, Encode: appendHost, Send: pc.sendTo,
	})
	c.udpMu.Lock()
	if c.sessions == nil {
		c.udpMu.Unlock()
		return nil, fmt.Errorf("hysteria: UDP to %s via %s: %w", dst, c.srv.Name, quicconn.ErrClientClosed)
	}
	c.sessions[pc] = struct{}{}
	c.udpMu.Unlock()
	for attempt := 0; ; attempt++ {
		err = pc.bind(ctx, q)
		if err == nil {
			return pc, nil
		}
		if attempt == 0 && ctx.Err() == nil && !q.Alive() {
			// The connection died under the request: ask a new one.
			if q, err = c.conns.Get(ctx); err == nil {
				continue
			}
		}
		pc.Close()
		return nil, fmt.Errorf("hysteria: UDP to %s via %s: %w", dst, c.srv.Name, err)
	}
}

// receiveDatagrams hands q's datagrams to their UDP sessions until q dies.
func (c *Client) receiveDatagrams(q *qconn) {
	var m udpMessage
	quicconn.ReceiveDatagrams(q.QC, func(b []byte) {
		if parseUDPMessage(b, &m) != nil {
			return
		}
		q.udpMu.RLock()
		pc := q.udp[m.SessionID]
		q.udpMu.RUnlock()
		if pc != nil {
			pc.deliver(&m)
		}
	})
}

// packetConn is one UDP session: the net.PacketConn ListenPacket returns.
type packetConn struct {
	*quicconn.PacketQueue // net.PacketConn but Close; WriteTo sends through sendTo; shut by Close or the Client's Close
	c                     *Client

	// Receiving side, used by the connection's datagram goroutine.
	rmu     sync.Mutex
	defrag  quicconn.Defragger
	srcHost []byte   // last source host as sent by the server
	srcPort uint16   // and port
	srcAddr net.Addr // and parsed (a flow.Addr), so a reply allocates nothing

	// Sending side, under the queue's send lock, which also serialises
	// binding once ListenPacket has returned.
	wbuf  []byte
	msgID uint16 // of the last fragmented datagram

	bmu  sync.Mutex   // guards the binding, which the hold goroutine clears
	q    *qconn       // the connection the session is on; nil: none
	id   uint32       // the session's ID there
	hold *quic.Stream // the session's stream there
}

// bind asks q for a session and puts pc on it; the queue's send lock must
// be held, unless ListenPacket has not returned pc yet. A
// goroutine waits on the session's stream and unbinds pc when it ends
// (the server dropped the session, or q died).
func (pc *packetConn) bind(ctx context.Context, q *qconn) error {
	st, id, err := pc.c.request(ctx, q, true, "", 0)
	if err != nil {
		return err
	}
	q.udpMu.Lock()
	q.udp[id] = pc
	q.udpMu.Unlock()
	pc.bmu.Lock()
	closed := pc.Closed() || pc.c.conns.Context().Err() != nil // the Client is closing: start no goroutine
	if !closed {
		pc.q, pc.id, pc.hold = q, id, st
	}
	pc.bmu.Unlock()
	if closed {
		pc.unbind(q, id, st)
		return net.ErrClosed
	}
	pc.c.conns.Go(func() {
		var b [64]byte
		for {
			if _, err := st.Read(b[:]); err != nil {
				break
			}
		}
		pc.unbind(q, id, st)
	})
	return nil
}

// unbind ends the session with id on q and forgets it if pc is still on
// it.
func (pc *packetConn) unbind(q *qconn, id uint32, st *quic.Stream) {
	st.CancelRead(0)
	st.Close()
	q.udpMu.Lock()
	if q.udp[id] == pc {
		delete(q.udp, id)
	}
	q.udpMu.Unlock()
	pc.bmu.Lock()
	if pc.hold == st {
		pc.q, pc.id, pc.hold = nil, 0, nil
	}
	pc.bmu.Unlock()
}

// deliver queues a message's datagram once it is whole.
func (pc *packetConn) deliver(m *udpMessage) {
	pc.rmu.Lock()
	defer pc.rmu.Unlock()
	payload, ok := pc.defrag.Feed(m.MsgID, m.FragID, m.FragCount, m.Data)
	if !ok {
		return
	}
	if pc.srcAddr == nil || m.Port != pc.srcPort || !bytes.Equal(m.Host, pc.srcHost) {
		a := flow.NameAddr(string(m.Host), m.Port)
		if !a.IsValid() {
			return
		}
		pc.srcHost = append(pc.srcHost[:0], m.Host...)
		pc.srcPort = m.Port
		pc.srcAddr = a
	}
	pc.Deliver(payload, pc.srcAddr)
}

// sendTo sends p to dst, whose host as a message carries it is host (for
// the queue's WriteTo). A datagram too large for one QUIC datagram is sent
// in fragments.
func (pc *packetConn) sendTo(p []byte, dst flow.Addr, host []byte) error {
	for attempt := 0; ; attempt++ {
		q, id, err := pc.session()
		if err != nil {
			return fmt.Errorf("hysteria: UDP to %s via %s: %w", dst, pc.c.srv.Name, err)
		}
		m := udpMessage{SessionID: id, Host: host, Port: dst.Port, FragCount: 1, Data: p}
		pc.wbuf = appendUDPMessage(pc.wbuf[:0], &m)
		err = q.QC.SendDatagram(pc.wbuf)
		var tooLarge *quic.DatagramTooLargeError
		if errors.As(err, &tooLarge) {
			err = pc.sendFragments(q, &m, int(tooLarge.MaxDatagramPayloadSize))
		}
		if err == nil {
			return nil
		}
		if attempt > 0 || q.Alive() {
			return fmt.Errorf("hysteria: UDP to %s via %s: %w", dst, pc.c.srv.Name, err)
		}
		// The connection died since session looked: send on a new one.
	}
}

// appendHost appends dst's host as a UDP message carries it.
func appendHost(b []byte, dst flow.Addr) ([]byte, error) {
	h := dst.Host()
	if len(h) > maxHostLen {
		return b, errHostTooLong
	}
	return append(b, h...), nil
}

// session returns the connection and session ID to send on: the current
// binding when it is on the live connection, otherwise a new session on
// it (dialled within the write deadline). The queue's send lock must be
// held.
func (pc *packetConn) session() (*qconn, uint32, error) {
	q, err := pc.c.conns.ForSend(pc.WriteDeadline())
	if err != nil {
		return nil, 0, err
	}
	pc.bmu.Lock()
	bound, id, old, oldID, oldSt := pc.q == q, pc.id, pc.q, pc.id, pc.hold
	pc.bmu.Unlock()
	if bound {
		return q, id, nil
	}
	if old != nil {
		pc.unbind(old, oldID, oldSt) // a retired connection's session
	}
	ctx, cancel := context.WithTimeout(pc.c.conns.Context(), quicconn.DialTimeout)
	defer cancel()
	if dl := pc.WriteDeadline(); !dl.IsZero() {
		var cancel2 context.CancelFunc
		ctx, cancel2 = context.WithDeadline(ctx, dl)
		defer cancel2()
	}
	if err := pc.bind(ctx, q); err != nil {
		return nil, 0, err
	}
	pc.bmu.Lock()
	defer pc.bmu.Unlock()
	if pc.q != q {
		return nil, 0, errors.New("UDP session ended as it began")
	}
	return q, pc.id, nil
}

// sendFragments sends m's data in fragments of at most maxSize bytes; the
// fragments share a random non-zero message ID, as the reference's do.
func (pc *packetConn) sendFragments(q *qconn, m *udpMessage, maxSize int) error {
	chunk, count, err := quicconn.FragmentPlan(m.headerLen(), len(m.Data), maxSize)
	if err != nil {
		return err
	}
	pc.msgID = uint16(rand.IntN(0xffff)) + 1
	for i := range count {
		f := *m
		f.MsgID, f.FragID, f.FragCount = pc.msgID, uint8(i), uint8(count)
		f.Data = m.Data[i*chunk : min((i+1)*chunk, len(m.Data))]
		pc.wbuf = appendUDPMessage(pc.wbuf[:0], &f)
		if err := q.QC.SendDatagram(pc.wbuf); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the session: its stream closes, which ends it on the server.
func (pc *packetConn) Close() error {
	pc.Shut()
	pc.c.udpMu.Lock()
	delete(pc.c.sessions, pc)
	pc.c.udpMu.Unlock()
	pc.bmu.Lock()
	q, id, st := pc.q, pc.id, pc.hold
	pc.bmu.Unlock()
	if q != nil {
		pc.unbind(q, id, st)
	}
	return nil
}
