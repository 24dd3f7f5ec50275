package failover

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Policer rates of the throttle phases, kB/s each way.
const (
	heavyKB       = 125  // 1 Mbit/s on the primary's UDP: far below the fallback
	moderateKB    = 1500 // 12 Mbit/s on the primary's UDP...
	moderateVLESS = 375  // ...with the fallback's TCP at 3 Mbit/s: the primary stays the faster
)

// TestFailoverThrottle runs issue 10's throttle plan against skiff through
// its SOCKS5 inbound, under 20 new connections per second and one long
// download (2 MiB/s when the path allows): a heavy policer on the
// primary's UDP, then lifted; a moderate one where the primary is still
// faster than the (policed) fallback; 10 % random loss; and the heavy
// policer toggled every 20 s. Figures go to the log as a table.
func TestFailoverThrottle(t *testing.T) {
	b := newBench(t)
	b.skiff = StartSkiff(t, b.topo, b.srv, b.probe, "--speed-url", b.speed)
	runThrottle(t, b, b.skiff.Dial, "skiff throttle figures, SOCKS5 inbound")
}

// TestSingBoxThrottle is the baseline: the same plan with sing-box's
// urltest (interval 10 s) as the client. It runs with FAILOVER_LONG=1 or
// FAILOVER_SINGBOX=1.
func TestSingBoxThrottle(t *testing.T) {
	if !long() && os.Getenv("FAILOVER_SINGBOX") != "1" {
		t.Skip("FAILOVER_LONG=1 or FAILOVER_SINGBOX=1 runs the sing-box urltest comparison")
	}
	b := newBench(t)
	sb := StartSingBoxClient(t, b.topo, b.srv, b.probe, 10*time.Second)
	time.Sleep(3 * time.Second) // urltest's first check
	runThrottle(t, b, sb.Dial, "sing-box urltest (interval 10s) throttle figures, same load")
}

// throttleDurations are the phases' lengths: CI's, or minute-long ones
// with FAILOVER_LONG=1.
type throttleDurations struct {
	Fault, Toggle, ReturnMax time.Duration
}

func throttlePhases() throttleDurations {
	if long() {
		return throttleDurations{Fault: 60 * time.Second, Toggle: 180 * time.Second, ReturnMax: 150 * time.Second}
	}
	return throttleDurations{Fault: 20 * time.Second, Toggle: 60 * time.Second, ReturnMax: 90 * time.Second}
}

// window is what one throttle phase did.
type window struct {
	at, end    time.Time
	rs         []Result
	dlMbit     float64       // the long download's goodput over the window
	toFallback time.Duration // onset → the first new connection answered via the fallback; -1: none
	moves      int           // changes of the member carrying consecutive successful new connections
	switches   []Switch      // skiff's failover lines (nil for sing-box)
	probeKB    float64       // bytes the origin served to speed probes, kB
}

// measure starts a new long download, through the member carrying new
// flows (the primary), runs apply, holds for hold, and measures [onset,
// onset+hold).
func (b *bench) measure(t *testing.T, apply func(), hold time.Duration, during func(time.Time)) *window {
	t.Helper()
	b.load.RestartDownload()
	for deadline := time.Now().Add(10 * time.Second); b.load.DownloadVia() != Primary; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the new long download did not start via %s (via %q)", Primary, b.load.DownloadVia())
		}
	}
	time.Sleep(3 * time.Second) // at its pace: the member's goodput is known
	dl0, pr0 := b.load.Downloaded(), b.speedN.Load()
	apply()
	w := &window{at: time.Now(), toFallback: -1}
	if during != nil {
		during(w.at)
	} else {
		time.Sleep(hold)
	}
	w.end = time.Now()
	w.dlMbit = float64(b.load.Downloaded()-dl0) * 8 / 1e6 / w.end.Sub(w.at).Seconds()
	w.probeKB = float64(b.speedN.Load()-pr0) / 1e3
	b.load.WaitResults(w.end, 30*time.Second)
	w.rs = b.load.Results(w.at, w.end)
	last := ""
	for _, r := range w.rs {
		if !r.OK() {
			continue
		}
		if r.Member == Fallback && w.toFallback < 0 {
			w.toFallback = r.End.Sub(w.at)
		}
		if last != "" && r.Member != last {
			w.moves++
		}
		last = r.Member
	}
	if b.skiff != nil {
		for _, sw := range b.skiff.Switches(w.at) {
			if sw.Time.Before(w.end) {
				w.switches = append(w.switches, sw)
			}
		}
	}
	return w
}

// add reports w's figures under phase.
func (b *bench) addWindow(t *testing.T, phase string, w *window) {
	b.report.add(phase, "held", w.end.Sub(w.at).Round(time.Second).String(), "")
	b.report.add(phase, "new connections started / failed", fmt.Sprintf("%d / %d", len(w.rs), len(failed(w.rs))), "")
	b.report.add(phase, "served via primary/fallback", members(w.rs), "")
	b.report.add(phase, "onset → first new connection via fallback", ms(w.toFallback), "")
	b.report.add(phase, "latency p50/p90/max", dist(w.rs), "")
	b.report.add(phase, "long download, Mbit/s", fmt.Sprintf("%.1f", w.dlMbit), "")
	b.report.add(phase, "long download", segments(b.load.Segments(w.at, w.end)), "")
	b.report.add(phase, "member changes of new connections", fmt.Sprint(w.moves), "")
	if b.skiff != nil {
		b.report.add(phase, "switch lines", fmt.Sprint(len(w.switches)), "")
		b.report.add(phase, "speed-probe kB served", fmt.Sprintf("%.0f", w.probeKB), "")
		for _, sw := range w.switches {
			t.Logf("%s: switch at +%v %s → %s: %s", phase, sw.Time.Sub(w.at).Round(time.Millisecond), orDash(sw.From), orDash(sw.To), sw.Reason)
		}
	}
	for i, r := range failed(w.rs) {
		if i == 5 {
			break
		}
		t.Logf("%s: failed request at +%v, took %v: %v", phase, r.Start.Sub(w.at).Round(time.Millisecond), ms(r.Took()), r.Err)
	}
}

// throttled returns the switches of ws that left a member as throttled.
func throttled(sws []Switch) int {
	n := 0
	for _, sw := range sws {
		if strings.Contains(sw.Reason, "throttled") {
			n++
		}
	}
	return n
}

// runThrottle runs the throttle plan through dial (skiff when b.skiff is
// set, else sing-box) and logs the figures under title.
func runThrottle(t *testing.T, b *bench, dial Dialer, title string) {
	b.startLoad(t, dial)
	d := throttlePhases()
	defer b.report.log(t, fmt.Sprintf("%s (20 new connections/s + a 2 MiB/s download; FAILOVER_LONG=%v)", title, long()))
	time.Sleep(5 * time.Second)
	b.waitPrimary(t, 30*time.Second)
	clear := func() {
		if err := b.fw.Clear(); err != nil {
			t.Fatal(err)
		}
	}
	set := func(rules ...[]Rule) func() {
		return func() {
			if err := b.fw.Set(rules...); err != nil {
				t.Fatal(err)
			}
		}
	}
	skiff := b.skiff != nil

	t.Run("heavy-policer", func(t *testing.T) {
		b.waitPrimary(t, d.ReturnMax)
		w := b.measure(t, set(PoliceUDP(Hy2Port, heavyKB)), d.Fault, nil)
		b.addWindow(t, "heavy policer (1 Mbit/s each way)", w)
		c := b.runComeback(t, "heavy policer lifted", clear, d.ReturnMax, skiff)
		_ = c
		if skiff {
			if throttled(w.switches) == 0 {
				t.Errorf("heavy policer: skiff did not leave the primary as throttled within %v", d.Fault)
			}
			if w.toFallback < 0 {
				t.Errorf("heavy policer: no new connection went via the fallback within %v", d.Fault)
			}
		}
	})

	t.Run("moderate-policer", func(t *testing.T) {
		b.waitPrimary(t, d.ReturnMax)
		w := b.measure(t, set(PoliceUDP(Hy2Port, moderateKB), PoliceTCP(VLESSPort, moderateVLESS)), d.Fault, nil)
		clear()
		b.addWindow(t, "moderate policer (12 Mbit/s; fallback at 3)", w)
		if skiff && throttled(w.switches) > 0 {
			t.Errorf("moderate policer: skiff left the primary, which is still the faster, as throttled")
		}
	})

	t.Run("loss-10pct", func(t *testing.T) {
		b.waitPrimary(t, d.ReturnMax)
		w := b.measure(t, set(LossUDP(Hy2Port, 10)), d.Fault, nil)
		clear()
		b.addWindow(t, "10 % loss each way", w)
		if skiff && throttled(w.switches) > 0 {
			t.Errorf("10 %% loss: skiff left the lossy but fast primary as throttled")
		}
	})

	t.Run("policer-toggled", func(t *testing.T) {
		b.waitPrimary(t, d.ReturnMax)
		w := b.measure(t, func() {}, d.Toggle, func(at time.Time) {
			for k := 0; time.Since(at) < d.Toggle; k++ {
				if k%2 == 0 {
					set(PoliceUDP(Hy2Port, heavyKB))()
				} else {
					clear()
				}
				time.Sleep(min(20*time.Second, d.Toggle-time.Since(at)))
			}
			clear()
		})
		b.addWindow(t, "heavy policer on/off every 20s", w)
		const hold = 10 * time.Second // the group's RecoverHold
		// A flap is new flows moving back within a hold of moving away.
		// A member failing with no other usable ("→ -") and another
		// taking over at once is one move, not two.
		var moves []Switch
		for _, sw := range w.switches {
			if sw.To != "" {
				moves = append(moves, sw)
			}
		}
		flaps := 0
		for i := 1; i < len(moves); i++ {
			if moves[i].Time.Sub(moves[i-1].Time) < hold {
				flaps++
			}
		}
		if skiff {
			b.report.add("heavy policer on/off every 20s", "switch pairs closer than 10s", fmt.Sprint(flaps), "0")
			if flaps > 0 {
				t.Errorf("policer toggled: %d switches came within %v of the previous one", flaps, hold)
			}
		}
	})
}
