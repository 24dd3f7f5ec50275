package netstack

import (
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/waiter"
)

// tcpConn is an app's TCP connection as the engine relays it: gonet's
// conn, which can also wait for the app's next bytes without reading them
// (readwait.Waiter), so that the relay's upload direction of an idle flow
// holds no buffer while it waits, and read what it has without waiting
// (readwait.TryReader), so that a bulk one does not wait before each read.
type tcpConn struct {
	*gonet.TCPConn
	ep tcpip.Endpoint
	wq *waiter.Queue

	mu       sync.Mutex
	deadline time.Time     // the read deadline, as WaitRead sees it
	kick     chan struct{} // a new read deadline: WaitRead looks again
	done     chan struct{} // closed by Close
	once     sync.Once

	// The waiter entry, made once: WaitRead is not concurrent with itself
	// (it runs on the reading goroutine).
	entry  waiter.Entry
	notify chan struct{}
}

func newTCPConn(wq *waiter.Queue, ep tcpip.Endpoint) *tcpConn {
	c := &tcpConn{TCPConn: gonet.NewTCPConn(wq, ep), ep: ep, wq: wq,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	c.entry, c.notify = waiter.NewChannelEntry(waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr)
	return c
}

// readable reports whether a Read would return at once: data, the app's
// FIN, a reset or a closed endpoint.
func (c *tcpConn) readable() bool {
	return c.ep.Readiness(waiter.ReadableEvents) != 0
}

// WaitRead waits until a Read would return at once, the read deadline
// passes or the conn is closed (readwait.Waiter).
func (c *tcpConn) WaitRead() bool {
	if c.readable() {
		return true
	}
	c.wq.EventRegister(&c.entry)
	defer c.wq.EventUnregister(&c.entry)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if c.readable() { // again, now that an arrival would notify
			return true
		}
		c.mu.Lock()
		d := c.deadline
		c.mu.Unlock()
		var expired <-chan time.Time
		if !d.IsZero() {
			wait := time.Until(d)
			if wait <= 0 {
				return true // the Read reports the timeout
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			expired = timer.C
		}
		select {
		case <-c.notify:
		case <-c.kick:
		case <-expired:
			return true
		case <-c.done:
			return true
		}
	}
}

// TryRead reads what the endpoint holds now, without waiting
// (readwait.TryReader): (0, nil) when it holds nothing, and also at the
// app's FIN or on an error, which the next Read reports.
func (c *tcpConn) TryRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w := tcpip.SliceWriter(p)
	res, err := c.ep.Read(&w, tcpip.ReadOptions{})
	if err != nil {
		return 0, nil
	}
	if res.Count > 0 {
		c.ep.ModerateRecvBuf(res.Count) // as gonet's Read does: the receive window's auto-tuning
	}
	return res.Count, nil
}

// SetReadDeadline sets the read deadline of gonet's conn and of WaitRead.
func (c *tcpConn) SetReadDeadline(t time.Time) error {
	c.setWaitDeadline(t)
	return c.TCPConn.SetReadDeadline(t)
}

// SetDeadline sets both deadlines, WaitRead's too.
func (c *tcpConn) SetDeadline(t time.Time) error {
	c.setWaitDeadline(t)
	return c.TCPConn.SetDeadline(t)
}

func (c *tcpConn) setWaitDeadline(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Close closes the conn and ends a WaitRead.
func (c *tcpConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.TCPConn.Close()
}
