package failover

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestSingBoxURLTest is the baseline for TestFailover's UDP block: the same
// topology, load and fault with sing-box as the client, its urltest group
// over the same two servers probing every minute, as users run it. It runs
// with FAILOVER_LONG=1 or FAILOVER_SINGBOX=1 (it needs more than a minute
// per phase, because urltest moves only at its next check).
func TestSingBoxURLTest(t *testing.T) {
	if !long() && os.Getenv("FAILOVER_SINGBOX") != "1" {
		t.Skip("FAILOVER_LONG=1 or FAILOVER_SINGBOX=1 runs the sing-box urltest comparison")
	}
	const interval = time.Minute
	b := newBench(t)
	sb := StartSingBoxClient(t, b.topo, b.srv, b.probe, interval)
	b.startLoad(t, sb.Dial)
	defer b.report.log(t, fmt.Sprintf("sing-box urltest (interval %v) figures, same load", interval))
	// urltest tests its members at start; until then it uses the first.
	time.Sleep(5 * time.Second)
	b.waitPrimary(t, 30*time.Second)

	// urltest moves at a check, up to an interval after the block, and a
	// check of a blackholed member takes its own time-out: hold the block
	// for up to three intervals, and 10 s past its move.
	hold := 3 * interval
	o := b.runOutageUntil(t, "udp-block", func() {
		if err := b.fw.Set(DropUDPTo(Hy2Port)); err != nil {
			t.Fatal(err)
		}
	}, hold, 10*time.Second)
	// urltest has no preferred order: it keeps the fallback unless the
	// primary is faster by more than its tolerance, so no return is
	// required; the figure says what happened within an interval and a half.
	b.runComeback(t, "udp-block lifted", func() {
		if err := b.fw.Clear(); err != nil {
			t.Fatal(err)
		}
	}, interval+interval/2, false)
	if o.Served < 0 {
		t.Errorf("sing-box's urltest never served a request through the fallback within %v of the block", hold)
	}
}
