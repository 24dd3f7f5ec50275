package failover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// Dialer opens a TCP connection to addr the way an application on the
// client would: through the client's SOCKS5 inbound now, straight at addr
// (into the TUN) in a TUN variant.
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

// SOCKSDialer dials through the SOCKS5 proxy at proxy, from namespace ns.
func SOCKSDialer(ns, proxy string) Dialer {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		err := InNS(ns, func() error {
			var err error
			c, err = harness.DialSOCKS(ctx, proxy, addr)
			return err
		})
		return c, err
	}
}

// DirectDialer dials addr itself from namespace ns, as an application
// that knows no proxy: with skiff's TUN up, the connection goes into the
// TUN, and connect returns once skiff has connected upstream (or fails
// with a reset when it could not).
func DirectDialer(ns string) Dialer {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		err := InNS(ns, func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, "tcp", addr)
			return err
		})
		return c, err
	}
}

// Result is one request of the load: a new connection, GET /small, the
// body read.
type Result struct {
	Start, End time.Time
	Connected  time.Duration // until the proxy answered the CONNECT (or failed it)
	Member     string        // which server carried it (Topology.Member); "" when it failed
	Err        error         // any error, a non-200 status, or the deadline
}

// OK reports whether the request succeeded.
func (r Result) OK() bool { return r.Err == nil }

// Took returns how long the request took.
func (r Result) Took() time.Duration { return r.End.Sub(r.Start) }

// Segment is one connection of the long download.
type Segment struct {
	Start, End time.Time
	Member     string
	Bytes      int64
	Err        error // why it ended
}

// Load opens new HTTP connections at a steady rate and keeps one long
// download running, recording every outcome. Run it with Run; read it
// with Results and Segments, also while it runs.
type Load struct {
	Dial   Dialer
	Topo   *Topology
	Origin string       // "ip:port"
	Rate   int          // new connections per second
	tmo    atomic.Int64 // per-request deadline (a time.Duration)
	dl     atomic.Int64 // bytes the long download has received, over all its connections
	mu     sync.Mutex
	res    []Result
	segs   []Segment
	starts []time.Time // when each request started, finished or not
	cur    *Segment    // the download running now; nil between two
	curC   net.Conn    // its connection
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// DownloadStall is how long the long download may receive nothing before
// the client gives up on it and starts another, as an application would.
const DownloadStall = 10 * time.Second

// NewLoad returns a load of rate new connections per second through dial.
func NewLoad(dial Dialer, topo *Topology, origin string, rate int) *Load {
	l := &Load{Dial: dial, Topo: topo, Origin: origin, Rate: rate}
	l.SetTimeout(5 * time.Second)
	return l
}

// SetTimeout sets the per-request deadline of requests started from now on.
func (l *Load) SetTimeout(d time.Duration) { l.tmo.Store(int64(d)) }

// Start starts the request loop and the download. Stop ends them.
func (l *Load) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.wg.Add(2)
	go l.loop(ctx)
	go l.download(ctx)
}

// Stop ends the load and waits for every request to finish.
func (l *Load) Stop() {
	if l.cancel != nil {
		l.cancel()
	}
	l.wg.Wait()
}

func (l *Load) loop(ctx context.Context) {
	defer l.wg.Done()
	// Requests go out on a fixed schedule, not a ticker: a ticker drops
	// ticks when the process is starved of CPU, and the rate is part of
	// the test.
	every := time.Second / time.Duration(l.Rate)
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		l.mu.Lock()
		l.starts = append(l.starts, start)
		l.mu.Unlock()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			r := l.request(ctx, start)
			l.mu.Lock()
			l.res = append(l.res, r)
			l.mu.Unlock()
		}()
		next = next.Add(every)
		timer.Reset(max(time.Until(next), 0))
	}
}

// request runs one request under the per-request deadline. A request cut
// short by Stop still counts: Stop comes after the figures are taken.
func (l *Load) request(parent context.Context, start time.Time) (r Result) {
	r.Start = start
	ctx, cancel := context.WithTimeout(parent, time.Duration(l.tmo.Load()))
	defer cancel()
	defer func() { r.End = time.Now() }()
	c, err := l.Dial(ctx, l.Origin)
	r.Connected = time.Since(r.Start)
	if err != nil {
		r.Err = fmt.Errorf("connect: %w", err)
		return r
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	fmt.Fprintf(c, "GET /small HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", l.Origin)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		r.Err = fmt.Errorf("response: %w", err)
		return r
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	resp.Body.Close()
	if err != nil {
		r.Err = fmt.Errorf("body: %w", err)
		return r
	}
	if resp.StatusCode != http.StatusOK {
		r.Err = fmt.Errorf("status %d", resp.StatusCode)
		return r
	}
	src, err := netip.ParseAddr(string(body))
	if err != nil {
		r.Err = fmt.Errorf("body %q: %w", body, err)
		return r
	}
	r.Member = l.Topo.Member(src)
	return r
}

// download keeps one long download running: when it ends or stalls for
// DownloadStall, it starts another.
func (l *Load) download(ctx context.Context) {
	defer l.wg.Done()
	for ctx.Err() == nil {
		s := l.segment(ctx)
		l.mu.Lock()
		l.segs = append(l.segs, s)
		l.mu.Unlock()
		if s.Bytes == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (l *Load) segment(ctx context.Context) (s Segment) {
	s.Start = time.Now()
	defer func() { s.End = time.Now() }()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, err := l.Dial(dctx, l.Origin)
	cancel()
	if err != nil {
		s.Err = fmt.Errorf("connect: %w", err)
		return s
	}
	defer c.Close()
	l.mu.Lock()
	l.curC = c
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.curC = nil
		l.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.SetDeadline(time.Now().Add(DownloadStall))
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", l.Origin)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		s.Err = fmt.Errorf("response: %w", err)
		return s
	}
	defer resp.Body.Close()
	if ap, err := netip.ParseAddrPort(resp.Header.Get("X-Source")); err == nil {
		s.Member = l.Topo.Member(ap.Addr())
	}
	l.mu.Lock()
	l.cur = &Segment{Start: s.Start, Member: s.Member}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.cur = nil
		l.mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		c.SetDeadline(time.Now().Add(DownloadStall))
		n, err := resp.Body.Read(buf)
		s.Bytes += int64(n)
		l.dl.Add(int64(n))
		l.mu.Lock()
		l.cur.Bytes = s.Bytes
		l.mu.Unlock()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("stalled: nothing for %v", DownloadStall)
			}
			s.Err = err
			return s
		}
	}
}

// RestartDownload ends the running download, as a user starting another
// one: the next goes wherever the client sends new connections now.
func (l *Load) RestartDownload() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.curC != nil {
		l.curC.Close()
	}
}

// DownloadVia returns the member carrying the running download, or "".
func (l *Load) DownloadVia() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return ""
	}
	return l.cur.Member
}

// Downloaded returns how many bytes the long download has received so far.
func (l *Load) Downloaded() int64 { return l.dl.Load() }

// Results returns the finished requests that started in [from, to),
// ordered by start.
func (l *Load) Results(from, to time.Time) []Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Result
	for _, r := range l.res {
		if !r.Start.Before(from) && r.Start.Before(to) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// InFlight returns the finished requests that started before at and ended
// after it.
func (l *Load) InFlight(at time.Time) []Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Result
	for _, r := range l.res {
		if r.Start.Before(at) && r.End.After(at) {
			out = append(out, r)
		}
	}
	return out
}

// Segments returns the download's segments that overlap [from, to), the
// one still running last (its End zero, its Err nil).
func (l *Load) Segments(from, to time.Time) []Segment {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Segment
	for _, s := range l.segs {
		if s.End.After(from) && s.Start.Before(to) {
			out = append(out, s)
		}
	}
	if l.cur != nil && l.cur.Start.Before(to) {
		out = append(out, *l.cur)
	}
	return out
}

// WaitResults waits until every request started before t has finished
// (its deadline bounds that), so that a window's figures are complete.
func (l *Load) WaitResults(t time.Time, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		n := 0
		for _, r := range l.res {
			if r.Start.Before(t) {
				n++
			}
		}
		l.mu.Unlock()
		if started := l.startedBefore(t); n >= started {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startedBefore counts the requests the loop started before t.
func (l *Load) startedBefore(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.starts {
		if s.Before(t) {
			n++
		}
	}
	return n
}
