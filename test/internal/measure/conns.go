package measure

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// The many-connection load: N connections to an echo server through the
// client, every one moving Size bytes each way at once (busy), then all of
// them open and idle for Hold (held), then closed (closed: read a couple of
// seconds later) and left alone for Idle (idle). The client's memory is read
// at each of those points; its peak is VmHWM once the busy phase is over.

// Phases of the many-connection load, in order.
const (
	PhaseBusy   = "busy"   // halfway through the transfers, all connections moving data
	PhaseHeld   = "held"   // all open and idle for Hold
	PhaseClosed = "closed" // closedAfter after they were closed
	PhaseIdle   = "idle"   // Idle after they were closed
)

// Phases lists the phases in order.
var Phases = []string{PhaseBusy, PhaseHeld, PhaseClosed, PhaseIdle}

// closedAfter is when, after the connections close, the "closed" phase is
// read: the client has seen the FINs and ended its flows.
const closedAfter = 2 * time.Second

// Conns is the many-connection load.
type Conns struct {
	Dial func(ctx context.Context) (net.Conn, error) // one connection to the echo server
	N    int
	Size int           // bytes each way per connection
	Hold time.Duration // open and idle before "held" is read
	Idle time.Duration // after "closed", before "idle" is read
}

// ConnsOutcome is what the load saw (not the client's figures).
type ConnsOutcome struct {
	OK       int     `json:"ok"`     // connections that moved all their bytes
	Failed   int     `json:"failed"` // connections that did not
	FirstErr string  `json:"first_err,omitempty"`
	Seconds  float64 `json:"seconds"` // time to dial them and move the data
	Alive    int     `json:"alive"`   // answering an echo after the hold
}

// Run runs the load, calling mark with each phase at its point (mark for
// PhaseBusy runs while the data moves). mark should read the client's
// figures and return soon.
func (c Conns) Run(ctx context.Context, mark func(phase string)) (ConnsOutcome, error) {
	var out ConnsOutcome
	start := time.Now()
	conns := make([]net.Conn, c.N)
	errs := make([]error, c.N)
	defer func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close()
			}
		}
	}()
	// Dial them all first (at most 128 dials at once), then start every
	// transfer together.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 128)
	for i := range c.N {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			conns[i], errs[i] = c.Dial(dctx)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	var (
		got     atomic.Int64
		half    = int64(c.N) * int64(c.Size) / 2
		busy    sync.WaitGroup
		marked  atomic.Bool
		payload = []byte(strings.Repeat("skiff many-connection load ", 32<<10/27+1))[:32<<10]
	)
	markBusy := func() {
		if marked.CompareAndSwap(false, true) {
			busy.Add(1)
			go func() { defer busy.Done(); mark(PhaseBusy) }()
		}
	}
	for i, cn := range conns {
		if cn == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn.SetDeadline(time.Now().Add(2 * time.Minute))
			werr := make(chan error, 1)
			go func() {
				for left := c.Size; left > 0; {
					n, err := cn.Write(payload[:min(left, len(payload))])
					left -= n
					if err != nil {
						werr <- err
						return
					}
				}
				werr <- nil
			}()
			buf := make([]byte, 32<<10)
			var rerr error
			for left := c.Size; left > 0; {
				n, err := cn.Read(buf[:min(left, len(buf))])
				left -= n
				if got.Add(int64(n)) >= half {
					markBusy()
				}
				if err != nil {
					rerr = fmt.Errorf("after %d of %d bytes back: %w", c.Size-left, c.Size, err)
					break
				}
			}
			if err := <-werr; rerr == nil && err != nil {
				rerr = fmt.Errorf("write: %w", err)
			}
			errs[i] = rerr
			cn.SetDeadline(time.Time{})
		}()
	}
	wg.Wait()
	markBusy() // when too few bytes came back to reach half
	busy.Wait()
	out.Seconds = time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			out.Failed++
			if out.FirstErr == "" {
				out.FirstErr = err.Error()
			}
		} else {
			out.OK++
		}
	}

	if err := sleepCtx(ctx, c.Hold); err != nil {
		return out, err
	}
	mark(PhaseHeld)
	for _, cn := range conns {
		if cn != nil && echoRound(cn) == nil {
			out.Alive++
		}
	}
	for i, cn := range conns {
		if cn != nil {
			cn.Close()
			conns[i] = nil
		}
	}
	closed := time.Now()
	if err := sleepCtx(ctx, closedAfter); err != nil {
		return out, err
	}
	mark(PhaseClosed)
	if err := sleepCtx(ctx, time.Until(closed.Add(c.Idle))); err != nil {
		return out, err
	}
	mark(PhaseIdle)
	return out, nil
}

// echoRound checks one short round trip.
func echoRound(c net.Conn) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	msg := []byte("skiff many-connection echo")
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != string(msg) {
		return fmt.Errorf("echo returned other bytes")
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PhaseFigures are a client's figures at one phase.
type PhaseFigures struct {
	RSSMiB     float64
	HeapMiB    float64 // Go heap objects (HeapAlloc); -1 unknown (sing-box)
	Goroutines int     // -1 unknown
}

// ConnsResult is one client's many-connection figures for one protocol.
type ConnsResult struct {
	Protocol, Client string
	N                int
	BaseMiB          float64 // RSS before
	PeakMiB          float64 // VmHWM after the busy phase
	Phases           map[string]PhaseFigures
	CPUSeconds       float64 // the client's CPU time from the start to "held" (setup and transfers; the hold is idle)
	Outcome          ConnsOutcome
	Err              error
}

// Runtime reads a Go client's heap (HeapAlloc: live and not yet swept
// objects, in bytes) and its goroutine count, without forcing a
// collection, so that the figures are the ones the process runs with.
type Runtime func() (heap uint64, goroutines int, err error)

// PprofRuntime reads them from the pprof endpoint base
// (".../debug/pprof/") through get, which returns the body of a GET: what
// `skiff run --pprof` serves.
func PprofRuntime(base string, get func(url string) (string, error)) Runtime {
	return func() (uint64, int, error) {
		s, err := get(base + "heap?debug=1")
		if err != nil {
			return 0, 0, err
		}
		m := heapAllocRE.FindStringSubmatch(s)
		if m == nil {
			return 0, 0, fmt.Errorf("%sheap?debug=1: no HeapAlloc", base)
		}
		heap, _ := strconv.ParseUint(m[1], 10, 64)
		if s, err = get(base + "goroutine?debug=1"); err != nil {
			return 0, 0, err
		}
		if m = goroutinesRE.FindStringSubmatch(s); m == nil {
			return 0, 0, fmt.Errorf("%sgoroutine?debug=1: no total", base)
		}
		n, _ := strconv.Atoi(m[1])
		return heap, n, nil
	}
}

// ReadPhase reads the RSS of pid and, when rt is not nil, the Go heap and
// the goroutine count through it (left unknown when it fails).
func ReadPhase(pid int, rt Runtime) PhaseFigures {
	f := PhaseFigures{HeapMiB: -1, Goroutines: -1}
	f.RSSMiB, _ = MemMiB(pid, "VmRSS")
	if rt == nil {
		return f
	}
	if heap, n, err := rt(); err == nil {
		f.HeapMiB, f.Goroutines = float64(heap)/(1<<20), n
	}
	return f
}

var (
	heapAllocRE  = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)`)
	goroutinesRE = regexp.MustCompile(`^goroutine profile: total (\d+)`)
)

// HTTPGet is a get for ReadPhase over this process's network.
func HTTPGet(url string) (string, error) {
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// PrintConns writes the many-connection table: per client and protocol,
// RSS / Go heap / goroutines at each phase, and the peak.
func PrintConns(out io.Writer, title string, cs []ConnsResult) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(out, title)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "protocol\tclient\tconns ok\talive\tsetup+busy s\tclient CPU s\tRSS before\tpeak RSS\t"
	for _, p := range Phases {
		hdr += p + " RSS/heap/gor\t"
	}
	fmt.Fprintln(w, hdr)
	for _, c := range cs {
		if c.Err != nil {
			fmt.Fprintf(w, "%s\t%s\tfailed\t\n", c.Protocol, c.Client)
			continue
		}
		line := fmt.Sprintf("%s\t%s\t%d/%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t", c.Protocol, c.Client, c.Outcome.OK, c.N, c.Outcome.Alive,
			c.Outcome.Seconds, c.CPUSeconds, c.BaseMiB, c.PeakMiB)
		for _, p := range Phases {
			f := c.Phases[p]
			s := fmt.Sprintf("%.1f", f.RSSMiB)
			if f.HeapMiB >= 0 {
				s += fmt.Sprintf(" / %.1f", f.HeapMiB)
			} else {
				s += " / -"
			}
			if f.Goroutines >= 0 {
				s += fmt.Sprintf(" / %d", f.Goroutines)
			} else {
				s += " / -"
			}
			line += s + "\t"
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
	for _, c := range cs {
		if c.Err != nil {
			fmt.Fprintf(out, "%s via %s, %d connections failed: %s\n", c.Protocol, c.Client, c.N, c.Err)
		} else if c.Outcome.Failed > 0 {
			fmt.Fprintf(out, "%s via %s: %d of %d connections failed, first: %s\n", c.Protocol, c.Client, c.Outcome.Failed, c.N, c.Outcome.FirstErr)
		}
	}
	fmt.Fprintln(out, "(MiB; heap is the Go heap's live and unswept objects, HeapAlloc, read without forcing a GC, from skiff run's pprof or the service's API; gor = goroutines; sing-box: RSS only)")
	fmt.Fprintln(out)
}
