package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound"
)

// probeLoop probes members while the group is in use: failing and
// recovering members quickly with back-off, healthy ones slowly. It ends
// when the group is closed or has been idle for the policy's IdleAfter; the
// next flow starts it again.
func (g *Group) probeLoop() {
	defer g.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	due := make([]time.Time, len(g.members)) // zero: probe now
	seen := make([]int64, len(g.members))    // bytes each member's flows had received at its last probe
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-g.done:
			return
		case r := <-g.probeNow:
			due[r.i] = time.Now().Add(r.after)
		case <-timer.C:
		}
		g.mu.Lock()
		if time.Since(g.lastActive) > g.policy.IdleAfter {
			g.probing = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()

		now := time.Now()
		type result struct {
			i    int
			rtt  time.Duration
			err  error
			note string // for the recovery event
		}
		results := make(chan result, len(g.members))
		n := 0
		for i := range g.members {
			if due[i].After(now) {
				continue
			}
			n++
			go func() {
				if throttled, mark := g.health[i].throttleInfo(); throttled {
					var rtt time.Duration
					var note string
					err := guard.Do(ctx, "re-measure", func() (err error) {
						rtt, note, err = g.remeasure(ctx, i, mark)
						return err
					})
					results <- result{i, rtt, err, note}
					return
				}
				var rtt time.Duration
				err := guard.Do(ctx, "probe", func() (err error) {
					rtt, err = g.probeMember(ctx, i)
					return err
				})
				results <- result{i, rtt, err, ""}
			}()
		}
		for ; n > 0; n-- {
			var r result
			select {
			case r = <-results:
			case <-g.done:
				cancel() // the probes end soon; their results are dropped
				return
			}
			switch {
			case r.err != nil && g.carried(r.i, &seen[r.i]) && g.health[r.i].get().usable():
				// The probe's target is out of its reach, not the
				// member: its flows got bytes meanwhile.
				if g.log != nil {
					g.log.Info("probe failed, but the member's flows carry data: not counted", "group", g.name, "member", g.members[r.i].Name, "err", r.err)
				}
			case errors.Is(r.err, outbound.ErrTargetRefused):
				// The server answered but reaches no probe URL: it is up.
				g.health[r.i].refused(time.Now())
				if g.log != nil {
					g.log.Info("probe URLs out of the server's reach: not counted", "group", g.name, "member", g.members[r.i].Name, "err", r.err)
				}
			case r.err != nil:
				g.failed(r.i, fmt.Errorf("probe: %w", r.err), true)
			default:
				g.carried(r.i, &seen[r.i])
				g.change(func() (bool, string, Why) {
					name := g.members[r.i].Name
					before := g.health[r.i].get()
					if g.health[r.i].probeOK(time.Now(), r.rtt, g.policy.RecoverProbes, g.policy.RecoverHold) {
						over := g.health[r.i].hold(g.policy.RecoverHold)
						return true, fmt.Sprintf("%s recovered: %d good probes over %v%s", name, g.policy.RecoverProbes, over, r.note),
							Why{Kind: WhyRecovered, Member: name, Probes: g.policy.RecoverProbes, Over: over}
					}
					return g.mode == URLTest || before == Unknown,
						fmt.Sprintf("latency of %s: %v", name, r.rtt.Round(time.Millisecond)), Why{Kind: WhyLatency, Member: name, RTT: r.rtt}
				})
			}
			due[r.i] = time.Now().Add(g.health[r.i].nextProbe(&g.policy))
		}
		next := due[0]
		for _, d := range due[1:] {
			if d.Before(next) {
				next = d
			}
		}
		timer.Reset(max(time.Until(next), 0))
	}
}

// probeReq asks the prober to probe member i after after.
type probeReq struct {
	i     int
	after time.Duration
}

// requestProbe asks the prober to probe member i at once.
func (g *Group) requestProbe(i int) {
	g.touch()
	select {
	case g.probeNow <- probeReq{i, 0}:
	default: // a probe request is already queued
	}
}

// scheduleProbe makes the prober probe member i after after, from now,
// whatever it had planned; it waits while the prober is busy.
func (g *Group) scheduleProbe(i int, after time.Duration) {
	g.touch()
	select {
	case g.probeNow <- probeReq{i, after}:
	case <-g.done:
	}
}

// probeClient returns an HTTP client that reaches servers through ob, one
// connection per request, and its transport (close its idle connections
// when done).
func probeClient(ob outbound.Outbound, timeout time.Duration) (*http.Client, *http.Transport) {
	tr := &http.Transport{
		Proxy: nil,
		// A panic in the member's dial is that probe's failure.
		DialContext:        outbound.HTTPDial(ob, "probe dial"),
		DisableKeepAlives:  true,
		DisableCompression: true,
		MaxIdleConns:       -1,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, tr
}

func probeRequest(ctx context.Context, url string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("probe url: %w", err)
	}
	req.Header.Set("User-Agent", "Skiff")
	return req, nil
}

// Probe fetches url through ob and returns how long the response took to
// arrive (connection set-up included, as other clients' "URL test" delay
// does). Any 2xx or 3xx status is a success; redirects are not followed.
func Probe(ctx context.Context, ob outbound.Outbound, url string, timeout time.Duration) (time.Duration, error) {
	c, tr := probeClient(ob, timeout)
	defer tr.CloseIdleConnections()
	req, err := probeRequest(ctx, url)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	rtt := time.Since(t0)
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return 0, fmt.Errorf("probe %s: status %d", url, resp.StatusCode)
	}
	return rtt, nil
}

// minSpeedBytes is the least body a speed probe must read to say anything.
const minSpeedBytes = 16 << 10

// Speed fetches url, which serves bytes, through ob and returns the
// body's goodput: bytes over the time from the response's header to the
// last byte read, reading at most maxBytes for at most limit after the
// header, which must come within headerTimeout. Running out of time is not
// an error when enough arrived: the rate is what the path delivered
// meanwhile. A path that delivered less than 16 KiB fails.
func Speed(ctx context.Context, ob outbound.Outbound, url string, maxBytes int64, limit, headerTimeout time.Duration) (rate float64, n int64, first time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, headerTimeout+limit)
	defer cancel()
	c, tr := probeClient(ob, 0)
	defer tr.CloseIdleConnections()
	req, err := probeRequest(ctx, url)
	if err != nil {
		return 0, 0, 0, err
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("speed probe: %w", err)
	}
	defer resp.Body.Close()
	t1 := time.Now()
	first = t1.Sub(t0)
	if first > headerTimeout {
		return 0, 0, first, fmt.Errorf("speed probe: no response within %v", headerTimeout)
	}
	stop := time.AfterFunc(limit, cancel)
	defer stop.Stop()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, first, fmt.Errorf("speed probe %s: status %d", url, resp.StatusCode)
	}
	buf := make([]byte, 32<<10)
	last := t1
	for n < maxBytes {
		k, rerr := resp.Body.Read(buf[:min(int64(len(buf)), maxBytes-n)])
		if k > 0 {
			n += int64(k)
			last = time.Now()
		}
		if rerr != nil {
			if rerr != io.EOF && ctx.Err() == nil {
				return 0, n, first, fmt.Errorf("speed probe: body: %w", rerr)
			}
			break
		}
	}
	if n < minSpeedBytes {
		return 0, n, first, fmt.Errorf("speed probe: %d bytes in %v", n, limit)
	}
	return float64(n) / max(last.Sub(t1), time.Millisecond).Seconds(), n, first, nil
}
