package group

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// packetConn is a UDP session through a group. When the member carrying it
// has sent nothing back for the policy's UDPSilence while the app kept
// sending (or for HedgeMin, once the group finds that member failing or
// suspect), the session moves to the next member, and the silent member is
// probed at once: the probe, not one quiet session, decides whether other
// flows leave it too.
type packetConn struct {
	g   *Group
	dst flow.Addr

	mu         sync.Mutex
	pc         net.PacketConn
	idx        int       // member carrying the session
	unanswered time.Time // first write since the last read; zero when answered
	writes     int       // writes since the last read
	moving     bool
	closed     bool
	rdeadline  time.Time
	wdeadline  time.Time
}

func newPacketConn(g *Group, dst flow.Addr, pc net.PacketConn, idx int) *packetConn {
	return &packetConn{g: g, dst: dst, pc: pc, idx: idx}
}

// ReadFrom reads from the member carrying the session, following it when
// the session moves.
func (p *packetConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		p.mu.Lock()
		pc := p.pc
		p.mu.Unlock()
		n, addr, err := pc.ReadFrom(b)
		p.mu.Lock()
		if err != nil {
			moved := p.pc != pc && !p.closed
			p.mu.Unlock()
			if moved {
				continue
			}
			return n, addr, err
		}
		p.unanswered = time.Time{}
		p.writes = 0
		p.mu.Unlock()
		return n, addr, nil
	}
}

// WriteTo sends through the member carrying the session, moving the session
// first when that member has gone silent.
func (p *packetConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	p.mu.Lock()
	now := time.Now()
	if p.unanswered.IsZero() {
		p.unanswered = now
	}
	p.writes++
	// A session waits out UDPSilence before it moves, unless the group has
	// meanwhile found its member failing or suspect: then it moves at once.
	silent := now.Sub(p.unanswered)
	move := !p.moving && !p.closed && p.writes >= 2 && p.g.mode != Selector &&
		(silent >= p.g.policy.UDPSilence || silent >= p.g.policy.HedgeMin && p.g.avoided(p.idx))
	if move {
		p.moving = true
	}
	p.mu.Unlock()
	if move {
		p.move()
	}
	p.mu.Lock()
	pc := p.pc
	p.mu.Unlock()
	return pc.WriteTo(b, addr)
}

// move opens the session on the next member and closes it on the silent
// one. If no other member can take it, the session stays where it is.
func (p *packetConn) move() {
	p.mu.Lock()
	from := p.idx
	p.mu.Unlock()
	p.g.requestProbe(from)
	defer func() {
		p.mu.Lock()
		p.moving = false
		p.mu.Unlock()
	}()
	for _, i := range p.g.order() {
		if i == from {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.g.dialTimeout(i))
		pc, err := p.g.members[i].Outbound.ListenPacket(ctx, p.dst)
		cancel()
		if err != nil {
			p.g.failed(i, fmt.Errorf("udp session to %s: %w", p.dst, err), false)
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pc.Close()
			return
		}
		old := p.pc
		p.pc, p.idx = pc, i
		p.unanswered, p.writes = time.Time{}, 0
		if !p.rdeadline.IsZero() {
			pc.SetReadDeadline(p.rdeadline)
		}
		if !p.wdeadline.IsZero() {
			pc.SetWriteDeadline(p.wdeadline)
		}
		p.mu.Unlock()
		old.Close() // wakes the reader, which follows p.pc
		return
	}
}

// Close ends the session.
func (p *packetConn) Close() error {
	p.mu.Lock()
	p.closed = true
	pc := p.pc
	p.mu.Unlock()
	return pc.Close()
}

// LocalAddr returns the local address of the member's session.
func (p *packetConn) LocalAddr() net.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pc.LocalAddr()
}

// SetDeadline sets both deadlines, on this member and any later one.
func (p *packetConn) SetDeadline(t time.Time) error {
	p.SetReadDeadline(t)
	return p.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline, on this member and any later one.
func (p *packetConn) SetReadDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rdeadline = t
	return p.pc.SetReadDeadline(t)
}

// SetWriteDeadline sets the write deadline, on this member and any later one.
func (p *packetConn) SetWriteDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wdeadline = t
	return p.pc.SetWriteDeadline(t)
}
