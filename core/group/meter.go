package group

import (
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// meter measures what one member delivers: the bytes its streams carry
// each way (atomic counters, added on every read and write, allocation
// free), the connect times of its recent dials, and its open streams, so
// that starving ones can be closed when the member is left as throttled.
// The group's watcher samples it once a second (tick); everything but the
// counters belongs to the watcher or is under mu.
type meter struct {
	rx, tx atomic.Int64 // bytes received and sent by the member's streams

	mu    sync.Mutex
	flows map[*meteredConn]struct{}
	dials [16]dialSample // ring of the latest dials' connect times
	nd    int            // dials recorded, ever
	mins  [10]minuteMin  // least connect time per minute of the last ten

	// The watcher's own state.
	lastRx int64
	secs   [secsKept]int64 // bytes received in each of the last seconds, secs[0] the latest
	peak   float64         // best 3-second goodput seen lately, bytes/s, decaying
}

// secsKept is how many seconds of per-second figures a meter keeps.
const secsKept = 8

type minuteMin struct {
	minute int64 // Unix minute
	d      time.Duration
}

type dialSample struct {
	at time.Time
	d  time.Duration
}

func newMeter() *meter { return &meter{flows: make(map[*meteredConn]struct{})} }

// dialed records a successful dial that took d.
func (m *meter) dialed(now time.Time, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dials[m.nd%len(m.dials)] = dialSample{now, d}
	m.nd++
	minute := now.Unix() / 60
	if slot := &m.mins[minute%int64(len(m.mins))]; slot.minute != minute || d < slot.d {
		*slot = minuteMin{minute, d}
	}
}

// dialFigures returns how many dials finished since since, their median
// connect time, and the least connect time of the last ten minutes.
func (m *meter) dialFigures(now, since time.Time) (n int, median, least time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ds []time.Duration
	for _, s := range m.dials[:min(m.nd, len(m.dials))] {
		if s.at.After(since) {
			ds = append(ds, s.d)
		}
	}
	minute := now.Unix() / 60
	for _, s := range m.mins {
		if s.d > 0 && minute-s.minute < int64(len(m.mins)) && (least == 0 || s.d < least) {
			least = s.d
		}
	}
	if len(ds) == 0 {
		return 0, 0, least
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return len(ds), ds[len(ds)/2], least
}

// peakHalfLife is how fast a member's remembered best goodput fades.
const peakHalfLife = 2 * time.Minute

// tick takes the second's figures: the member's goodput, and each open
// stream's activity. Called once a second by the watcher only.
func (m *meter) tick() {
	rx := m.rx.Load()
	copy(m.secs[1:], m.secs[:len(m.secs)-1])
	m.secs[0] = rx - m.lastRx
	m.lastRx = rx
	avg3 := float64(m.secs[0]+m.secs[1]+m.secs[2]) / 3
	m.peak = max(m.peak*(1-1/peakHalfLife.Seconds()*0.693), avg3)
	m.mu.Lock()
	for c := range m.flows {
		c.tick()
	}
	m.mu.Unlock()
}

// window returns the bytes received in the last n seconds and how many
// open streams received something in each of them.
func (m *meter) window(n int) (bytes int64, streams int) {
	for _, b := range m.secs[:n] {
		bytes += b
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.flows {
		if c.active(n) == n {
			streams++
		}
	}
	return bytes, streams
}

// starving returns the open streams that get (nearly) nothing: stalled
// ones, which sent and have heard nothing back for stallSecs, and those
// receiving without pause but at less than floor bytes/s over the window.
// Idle streams (nothing sent, nothing received) are not starving.
func (m *meter) starving(floor float64, window int) []*meteredConn {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*meteredConn
	for c := range m.flows {
		if c.starving(floor, window) {
			out = append(out, c)
		}
	}
	return out
}

func (m *meter) add(c *meteredConn) {
	m.mu.Lock()
	m.flows[c] = struct{}{}
	m.mu.Unlock()
}

func (m *meter) remove(c *meteredConn) {
	m.mu.Lock()
	delete(m.flows, c)
	m.mu.Unlock()
}

// stallSecs is how long a stream that sent something may hear nothing
// back before it counts as stalled.
const stallSecs = 3

// meteredConn is a member's stream, counted. It keeps the stream's
// CloseWrite and relay.FrameWriter, when it has them, through the
// variants wrap returns, and its WaitRead and TryRead (readwait): without
// the first a group's idle flows would hold a relay buffer each, without
// the second its bulk flows would wait before every read.
type meteredConn struct {
	net.Conn
	wait   readwait.Waiter    // the stream's; nil: it cannot wait
	try    readwait.TryReader // the stream's; nil: it cannot read without waiting
	m      *meter
	rx, tx atomic.Int64
	closed atomic.Bool

	// The watcher's own state (under m.mu).
	lastRx, lastTx int64
	secs           [secsKept]int64 // bytes received per second, secs[0] the latest
	waiting        int             // seconds since it sent with nothing received
}

func (c *meteredConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.rx.Add(int64(n))
		c.m.rx.Add(int64(n))
	}
	return n, err
}

// ReadWaiters offers the counted stream's WaitRead and TryRead only where
// the stream has them (readwait.Wrapper).
func (c *meteredConn) ReadWaiters() (readwait.Waiter, readwait.TryReader) {
	var (
		w readwait.Waiter
		t readwait.TryReader
	)
	if c.wait != nil {
		w = c
	}
	if c.try != nil {
		t = c
	}
	return w, t
}

// WaitRead waits as the stream does (readwait.Waiter); false when it
// cannot wait.
func (c *meteredConn) WaitRead() bool { return c.wait != nil && c.wait.WaitRead() }

// TryRead reads what the stream has at once (readwait.TryReader), counted;
// (0, nil) when it cannot read without waiting.
func (c *meteredConn) TryRead(b []byte) (int, error) {
	if c.try == nil {
		return 0, nil
	}
	n, err := c.try.TryRead(b)
	if n > 0 {
		c.rx.Add(int64(n))
		c.m.rx.Add(int64(n))
	}
	return n, err
}

func (c *meteredConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.tx.Add(int64(n))
		c.m.tx.Add(int64(n))
	}
	return n, err
}

func (c *meteredConn) Close() error {
	if !c.closed.Swap(true) {
		c.m.remove(c)
	}
	return c.Conn.Close()
}

func (c *meteredConn) tick() {
	rx, tx := c.rx.Load(), c.tx.Load()
	copy(c.secs[1:], c.secs[:len(c.secs)-1])
	c.secs[0] = rx - c.lastRx
	switch {
	case rx != c.lastRx:
		c.waiting = 0
	case tx != c.lastTx || c.waiting > 0:
		c.waiting++
	}
	c.lastRx, c.lastTx = rx, tx
}

// active returns in how many of the last n seconds the stream received.
func (c *meteredConn) active(n int) int {
	k := 0
	for _, b := range c.secs[:n] {
		if b > 0 {
			k++
		}
	}
	return k
}

func (c *meteredConn) starving(floor float64, window int) bool {
	if c.waiting >= stallSecs {
		return true
	}
	var bytes int64
	for _, b := range c.secs[:window] {
		bytes += b
	}
	return c.active(window) >= window-1 && float64(bytes)/float64(window) < floor
}

type meteredCW struct{ *meteredConn }

func (c meteredCW) CloseWrite() error {
	return c.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

// SoftCloseWrite passes on whether the conn's CloseWrite is only a marker
// (see relay.SoftCloser).
func (c *meteredConn) SoftCloseWrite() bool {
	sc, ok := c.Conn.(relay.SoftCloser)
	return ok && sc.SoftCloseWrite()
}

type meteredFW struct{ *meteredConn }

func (c meteredFW) FrontHeadroom() int { return c.Conn.(relay.FrameWriter).FrontHeadroom() }

// TailRoom passes the conn's tail room on (0: it needs none).
func (c meteredFW) TailRoom() int {
	if tr, ok := c.Conn.(relay.TailRoomer); ok {
		return tr.TailRoom()
	}
	return 0
}

func (c meteredFW) WriteFrame(b []byte) (int, error) {
	n, err := c.Conn.(relay.FrameWriter).WriteFrame(b)
	if n > 0 {
		c.tx.Add(int64(n))
		c.m.tx.Add(int64(n))
	}
	return n, err
}

type meteredCWFW struct {
	meteredFW
}

func (c meteredCWFW) CloseWrite() error {
	return c.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

// wrap returns c counted by m, with c's optional methods.
func (m *meter) wrap(c net.Conn) net.Conn {
	w, t := readwait.For(c)
	mc := &meteredConn{Conn: c, wait: w, try: t, m: m}
	m.add(mc)
	_, cw := c.(interface{ CloseWrite() error })
	_, fw := c.(relay.FrameWriter)
	switch {
	case cw && fw:
		return meteredCWFW{meteredFW{mc}}
	case cw:
		return meteredCW{mc}
	case fw:
		return meteredFW{mc}
	}
	return mc
}
