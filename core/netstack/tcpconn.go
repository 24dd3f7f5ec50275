package netstack

import (
	"sync"
	"sync/atomic"
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
// It can also call back when the app's next bytes come (readwait.Notifier),
// through a gVisor waiter callback, so that the upload direction of an idle
// flow holds no goroutine either.
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
	limit  *time.Timer // WaitReadFor's, made once

	// NotifyRead's callback, pending while armed: whoever clears armed
	// first (an event of the endpoint, the read deadline, a new deadline,
	// Close; or NotifyRead taking it back) calls it. NotifyRead writes cb
	// before it arms, so a wait allocates nothing. The entry that hands
	// the endpoint's events to it is registered for the conn's life:
	// gVisor raises events under its queue's lock, so the entry cannot
	// come and go with each wait.
	cb          func()
	armed       atomic.Bool
	notifyEntry waiter.Entry
	timer       *time.Timer // under mu: calls back at the read deadline
}

// readEvents are the endpoint's events after which a Read returns at once.
const readEvents = waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr

func newTCPConn(wq *waiter.Queue, ep tcpip.Endpoint) *tcpConn {
	c := &tcpConn{TCPConn: gonet.NewTCPConn(wq, ep), ep: ep, wq: wq,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	c.entry, c.notify = waiter.NewChannelEntry(readEvents)
	c.notifyEntry = waiter.NewFunctionEntry(readEvents, func(waiter.EventMask) { c.callBack() })
	wq.EventRegister(&c.notifyEntry)
	return c
}

// NotifyRead arranges for f to be called, on another goroutine, once a
// Read would return at once, the read deadline passes or changes, or the
// conn is closed (readwait.Notifier). It reports false, at once, when a
// Read would return at once now.
func (c *tcpConn) NotifyRead(f func()) bool {
	c.cb = f
	c.armed.Store(true)
	// Now that an event would call back, look at what could have happened
	// before: the callback is ours to take back when it did.
	if c.readable() || c.closed() || c.armDeadline() {
		if c.armed.CompareAndSwap(true, false) {
			return false
		}
	}
	return true
}

// armDeadline reports whether the read deadline has passed, and else
// arms the timer that calls back when it does.
func (c *tcpConn) armDeadline() (passed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadline.IsZero() {
		return false
	}
	wait := time.Until(c.deadline)
	if wait <= 0 {
		return true
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(wait, c.callBack)
	} else {
		c.timer.Reset(wait)
	}
	return false
}

// callBack calls NotifyRead's callback, when one is pending and nobody
// took it first. A timer left from an earlier wait may call early; the
// caller then asks again.
func (c *tcpConn) callBack() {
	if c.armed.CompareAndSwap(true, false) {
		c.cb()
	}
}

func (c *tcpConn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// readable reports whether a Read would return at once: data, the app's
// FIN, a reset or a closed endpoint.
func (c *tcpConn) readable() bool {
	return c.ep.Readiness(waiter.ReadableEvents) != 0
}

// WaitRead waits until a Read would return at once, the read deadline
// passes or the conn is closed (readwait.Waiter).
func (c *tcpConn) WaitRead() bool { return c.waitRead(0) }

// WaitReadFor is WaitRead for at most d (readwait.Notifier): false when d
// passed first.
func (c *tcpConn) WaitReadFor(d time.Duration) bool { return c.waitRead(d) }

// waitRead waits as WaitRead does, for at most limit when limit > 0, and
// reports false when the limit passed first.
func (c *tcpConn) waitRead(limit time.Duration) bool {
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
	var over <-chan time.Time
	if limit > 0 {
		if c.limit == nil {
			c.limit = time.NewTimer(limit)
		} else {
			c.limit.Reset(limit)
		}
		defer c.limit.Stop()
		over = c.limit.C
	}
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
		case <-over:
			return c.readable()
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
	c.callBack()
}

// Close closes the conn and ends a WaitRead, or calls NotifyRead's
// callback.
func (c *tcpConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.wq.EventUnregister(&c.notifyEntry)
		c.mu.Lock()
		if c.timer != nil {
			c.timer.Stop()
		}
		c.mu.Unlock()
	})
	err := c.TCPConn.Close()
	c.callBack()
	return err
}
