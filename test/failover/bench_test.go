package failover

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// long reports whether the minute-long report mode is on.
func long() bool { return os.Getenv("FAILOVER_LONG") == "1" }

// durations of the phases: quick enough for CI by default, minute-long
// with FAILOVER_LONG=1.
type durations struct {
	Warm      time.Duration // load before the first fault
	Block     time.Duration // a UDP block (and a killed server) lasts this long
	Trials    int           // UDP block trials
	Loss      time.Duration // the 10 % loss phase
	BothDown  time.Duration // both members down
	ReturnMax time.Duration // most we wait for the return to the primary
}

func phaseDurations() durations {
	if long() {
		return durations{Warm: 5 * time.Second, Block: 60 * time.Second, Trials: 3, Loss: 120 * time.Second, BothDown: 30 * time.Second, ReturnMax: 150 * time.Second}
	}
	return durations{Warm: 3 * time.Second, Block: 12 * time.Second, Trials: 1, Loss: 20 * time.Second, BothDown: 8 * time.Second, ReturnMax: 90 * time.Second}
}

// bench is one topology with servers, origin, a client and its load.
type bench struct {
	topo    *Topology
	fw      Firewall
	srv     *Servers
	origin  string
	probe   string
	speed   string       // skiff's --speed-url
	speedN  atomic.Int64 // bytes the origin served to speed probes
	load    *Load
	skiff   *Skiff  // nil when sing-box is the client
	refusal refusal // how the client sees skiff give up (both members down)
	report  *report
}

// newBench builds the topology and the servers; the caller starts a
// client and then b.startLoad.
func newBench(t *testing.T) *bench {
	t.Helper()
	if !Root() {
		t.Skip("needs root: network namespaces and nftables")
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s (iproute2, nftables): %v", bin, err)
		}
	}
	harness.NeedSkiff(t)
	harness.NeedSingBox(t)
	b := &bench{report: &report{}}
	b.topo = NewTopology(t)
	b.fw = Firewall{Server: b.topo.Server, Client: b.topo.Client}
	b.origin = StartOrigin(t, b.topo, &b.speedN)
	b.probe = "http://" + b.origin + "/generate_204"
	b.speed = "http://" + b.origin + "/__down?bytes=1048576"
	b.srv = StartServers(t, b.topo)
	return b
}

func (b *bench) startLoad(t *testing.T, dial Dialer) {
	b.load = NewLoad(dial, b.topo, b.origin, 20)
	b.load.Start()
	t.Cleanup(b.load.Stop)
}

// recent returns the members of the last n requests that finished, most
// recent last; "!" stands for a failure.
func (b *bench) recent(n int) []string {
	rs := b.load.Results(time.Now().Add(-10*time.Second), time.Now())
	var out []string
	for _, r := range rs {
		if r.OK() {
			out = append(out, r.Member)
		} else {
			out = append(out, "!")
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// waitPrimary waits until the last 20 requests (a second of load) all went
// through the primary.
func (b *bench) waitPrimary(t *testing.T, max time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		r := b.recent(20)
		all := len(r) == 20
		for _, m := range r {
			all = all && m == Primary
		}
		if all {
			return time.Since(start)
		}
		if time.Since(start) > max {
			var last error
			for _, r := range b.load.Results(time.Now().Add(-10*time.Second), time.Now()) {
				if r.Err != nil {
					last = r.Err
				}
			}
			t.Fatalf("new flows are not back on %s after %v; last requests: %v; last error: %v", Primary, max, r, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outage is what one fault did to the new connections.
type outage struct {
	Name        string
	Hold        time.Duration
	Requests    []Result // started during the fault
	InFlight    []Result // started before it, ended after
	FirstTook   time.Duration
	FirstVia    string
	Served      time.Duration // fault to the first answer through the fallback
	SwitchLine  time.Duration // fault to skiff's failover line; -1: none
	SwitchWhy   string
	DownloadLog []Segment
}

// Failed returns the failed requests among those started during the fault.
func (o *outage) Failed() []Result { return failed(o.Requests) }

func failed(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if !r.OK() {
			out = append(out, r)
		}
	}
	return out
}

// runOutage applies a fault, keeps it for hold under load, and measures.
func (b *bench) runOutage(t *testing.T, name string, apply func(), hold time.Duration) *outage {
	t.Helper()
	return b.runOutageUntil(t, name, apply, hold, 0)
}

// runOutageUntil is runOutage that ends the fault early, after, once a
// request has been answered through the fallback (for a client that may
// take minutes to move); after 0 holds the fault for hold.
func (b *bench) runOutageUntil(t *testing.T, name string, apply func(), hold, after time.Duration) *outage {
	t.Helper()
	apply()
	at := time.Now()
	stop := at.Add(hold)
	for time.Now().Before(stop) {
		time.Sleep(100 * time.Millisecond)
		if after <= 0 {
			continue
		}
		for _, r := range b.load.Results(at, time.Now()) {
			if r.OK() && r.Member == Fallback {
				if e := r.End.Add(after); e.Before(stop) {
					stop = e
				}
				break
			}
		}
	}
	end := time.Now()
	b.load.WaitResults(end, 30*time.Second)
	o := &outage{Name: name, Hold: end.Sub(at), Requests: b.load.Results(at, end), InFlight: b.load.InFlight(at), SwitchLine: -1, Served: -1}
	if len(o.Requests) > 0 {
		o.FirstTook, o.FirstVia = o.Requests[0].Took(), o.Requests[0].Member
	}
	for _, r := range o.Requests {
		if r.OK() && r.Member == Fallback && (o.Served < 0 || r.End.Sub(at) < o.Served) {
			o.Served = r.End.Sub(at)
		}
	}
	if b.skiff != nil {
		for _, sw := range b.skiff.Switches(at) {
			if sw.From == Primary && sw.Time.Before(end) {
				o.SwitchLine, o.SwitchWhy = sw.Time.Sub(at), sw.Reason
				break
			}
		}
	}
	o.DownloadLog = b.load.Segments(at, end)
	b.logOutage(t, o)
	return o
}

func (b *bench) logOutage(t *testing.T, o *outage) {
	t.Helper()
	rs := o.Requests
	var early, late []Result
	for _, r := range rs {
		if r.Start.Sub(rs[0].Start) < 2*time.Second {
			early = append(early, r)
		} else {
			late = append(late, r)
		}
	}
	f := failed(rs)
	p := o.Name
	b.report.add(p, "fault held", o.Hold.Round(time.Second).String(), "")
	b.report.add(p, "new connections started / failed", fmt.Sprintf("%d / %d", len(rs), len(f)), "0 failed")
	b.report.add(p, "in flight at the fault / failed", fmt.Sprintf("%d / %d", len(o.InFlight), len(failed(o.InFlight))), "(existing flows: not covered)")
	b.report.add(p, "first new connection: via, took", fmt.Sprintf("%s, %v", o.FirstVia, ms(o.FirstTook)), "fallback, ≤ 1s")
	b.report.add(p, "fault → first answer via fallback", ms(o.Served), "≤ 1s")
	if b.skiff != nil {
		b.report.add(p, "fault → failover line", ms(o.SwitchLine), "")
		b.report.add(p, "failover reason", o.SwitchWhy, "")
	}
	b.report.add(p, "latency first 2 s p50/p90/max", dist(early), "")
	b.report.add(p, "latency after p50/p90/max", dist(late), "")
	b.report.add(p, "served via primary/fallback", members(rs), "")
	b.report.add(p, "long download", segments(o.DownloadLog), "")
	for i, r := range f {
		if i == 5 {
			t.Logf("%s: … %d more failures", p, len(f)-5)
			break
		}
		t.Logf("%s: failed request started %v after the fault, took %v: %v", p, r.Start.Sub(rs[0].Start).Round(time.Millisecond), ms(r.Took()), r.Err)
	}
}

// comeback is how the new flows returned to the primary after a fault.
type comeback struct {
	Line   time.Duration // fault cleared → skiff's return line; -1: none
	Served time.Duration // fault cleared → first answer via primary
	Failed int
}

// runComeback clears a fault and measures the return to the primary; when
// must is set, not returning within max fails t.
func (b *bench) runComeback(t *testing.T, name string, clear func(), max time.Duration, must bool) *comeback {
	t.Helper()
	clear()
	at := time.Now()
	c := &comeback{Line: -1, Served: -1}
	deadline := at.Add(max)
	for time.Now().Before(deadline) && c.Served < 0 {
		for _, r := range b.load.Results(at, time.Now()) {
			if r.OK() && r.Member == Primary {
				c.Served = r.End.Sub(at)
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b.skiff != nil {
		if sw, ok := b.skiff.WaitSwitch(at, Primary, time.Until(deadline)); ok {
			c.Line = sw.Time.Sub(at)
		}
	}
	c.Failed = len(failed(b.load.Results(at, time.Now().Add(-6*time.Second))))
	b.report.add(name, "cleared → first answer via primary", ms(c.Served), "hysteresis: ≥ 10s")
	if b.skiff != nil {
		b.report.add(name, "cleared → return line", ms(c.Line), "")
	}
	b.report.add(name, "failed connections meanwhile", fmt.Sprint(c.Failed), "0")
	if c.Served < 0 && must {
		t.Errorf("%s: new flows did not return to %s within %v", name, Primary, max)
	}
	return c
}

// ms formats a duration for the report; a negative one is "never".
func ms(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// dist returns "p50 / p90 / max" of the successful requests' durations.
func dist(rs []Result) string {
	var d []time.Duration
	for _, r := range rs {
		if r.OK() {
			d = append(d, r.Took())
		}
	}
	if len(d) == 0 {
		return "-"
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return fmt.Sprintf("%v / %v / %v (n=%d)", ms(q(0.5)), ms(q(0.9)), ms(d[len(d)-1]), len(d))
}

func members(rs []Result) string {
	var p, f int
	for _, r := range rs {
		switch r.Member {
		case Primary:
			p++
		case Fallback:
			f++
		}
	}
	return fmt.Sprintf("%d / %d", p, f)
}

func segments(ss []Segment) string {
	var parts []string
	for _, s := range ss {
		why := "still running"
		if s.Err != nil {
			why = s.Err.Error()
			if len(why) > 60 {
				why = why[:60] + "…"
			}
		}
		parts = append(parts, fmt.Sprintf("[%s %.1f MB: %s]", orDash(s.Member), float64(s.Bytes)/1e6, why))
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// isSOCKSReply reports whether err is the proxy's failure reply (a clear
// error) rather than a time-out or a reset.
func isSOCKSReply(err error) bool {
	var re *harness.ReplyError
	return errors.As(err, &re)
}

// report is the table of figures a test prints at its end.
type report struct {
	mu   sync.Mutex
	rows [][4]string
}

func (r *report) add(phase, what, value, goal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, [4]string{phase, what, value, goal})
}

func (r *report) log(t *testing.T, title string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "phase\tfigure\tvalue\tgoal\n")
	last := ""
	for _, row := range r.rows {
		phase := row[0]
		if phase == last {
			phase = ""
		}
		last = row[0]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", phase, row[1], row[2], row[3])
	}
	w.Flush()
	t.Logf("%s\n%s", title, b.String())
}
