package relay

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/guard"
)

// Idle time-outs for UDP sessions.
const (
	// UDPTimeout ends a UDP session after this long without a datagram in
	// either direction.
	UDPTimeout = 60 * time.Second
	// DNSTimeout is the time-out of sessions to port 53: a lookup is one
	// question and its answer, so such a session is over soon.
	DNSTimeout = 10 * time.Second
)

// IdleTimeout returns the idle time-out for a UDP session to port.
func IdleTimeout(port uint16) time.Duration {
	if port == 53 {
		return DNSTimeout
	}
	return UDPTimeout
}

// Packet relays a UDP session between app (the app's side: ReadFrom yields
// a datagram and its destination, WriteTo takes a reply and its source) and
// up (the upstream session: WriteTo takes a destination, ReadFrom yields a
// reply and its source). Datagrams from app are counted in upCount, replies
// in downCount; either may be nil.
//
// It returns when the session has been idle for idle (0: UDPTimeout), when
// ctx ends, or when either side fails to read; it closes both conns. A
// datagram that cannot be written is dropped, as UDP would.
func Packet(ctx context.Context, app, up net.PacketConn, idle time.Duration, upCount, downCount Counter) error {
	if idle <= 0 {
		idle = UDPTimeout
	}
	if upCount == nil {
		upCount = nopCounter{}
	}
	if downCount == nil {
		downCount = nopCounter{}
	}
	s := &packetSession{app: app, up: up, start: time.Now()}
	s.timer = time.AfterFunc(idle, func() { s.checkIdle(idle) })
	stop := context.AfterFunc(ctx, func() { s.close(ctx.Err()) })

	defer s.close(nil) // also when a panic unwinds through here, so the other direction ends
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() { errc <- err }()
		defer guard.Catch(ctx, &err, "udp relay")
		err = s.copy(up, app, upCount)
	}()
	errDown := s.copy(app, up, downCount)
	errUp := <-errc
	stop()
	s.timer.Stop()
	s.close(nil)

	if err := s.reason.Load(); err != nil {
		return *err
	}
	if errUp != nil {
		return errUp
	}
	return errDown
}

// ErrIdle is returned by Packet when a session ended for lack of traffic.
var ErrIdle = errors.New("relay: udp session idle")

type packetSession struct {
	app, up net.PacketConn
	start   time.Time
	last    atomic.Int64 // time.Since(start) at the last datagram, in ns
	timer   *time.Timer
	once    sync.Once
	reason  atomic.Pointer[error] // why the session was closed from outside the copy loops
}

// touch records activity; it is called per datagram and does not allocate.
func (s *packetSession) touch() { s.last.Store(int64(time.Since(s.start))) }

func (s *packetSession) checkIdle(idle time.Duration) {
	quiet := time.Since(s.start) - time.Duration(s.last.Load())
	if quiet >= idle {
		s.close(ErrIdle)
		return
	}
	s.timer.Reset(idle - quiet)
}

func (s *packetSession) close(reason error) {
	s.once.Do(func() {
		if reason != nil {
			s.reason.Store(&reason)
		}
		s.app.Close()
		s.up.Close()
	})
}

// copy moves datagrams from src to dst until src fails, then closes both
// sides so that the other direction ends too.
func (s *packetSession) copy(dst, src net.PacketConn, c Counter) error {
	bp := datagramPool.Get().(*[]byte)
	defer datagramPool.Put(bp)
	buf := *bp
	for {
		n, addr, err := src.ReadFrom(buf)
		if err != nil {
			s.close(nil)
			if isClosed(err) {
				return nil
			}
			return err
		}
		s.touch()
		c.Add(int64(n))
		if _, err := dst.WriteTo(buf[:n], addr); err != nil && errors.Is(err, net.ErrClosed) {
			s.close(nil)
			return nil
		}
	}
}
