package group

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
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
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-g.done:
			return
		case i := <-g.probeNow:
			due[i] = time.Time{}
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
			i   int
			rtt time.Duration
			err error
		}
		results := make(chan result, len(g.members))
		n := 0
		for i := range g.members {
			if due[i].After(now) {
				continue
			}
			n++
			go func() {
				var rtt time.Duration
				err := guard.Do(ctx, "probe", func() (err error) {
					rtt, err = Probe(ctx, g.members[i].Outbound, g.policy.ProbeURL, g.policy.ProbeTimeout)
					return err
				})
				results <- result{i, rtt, err}
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
			if r.err != nil {
				g.failed(r.i, fmt.Errorf("probe: %w", r.err), true)
			} else {
				before := g.health[r.i].get()
				if g.health[r.i].probeOK(time.Now(), r.rtt, g.policy.RecoverProbes, g.policy.RecoverHold) {
					g.refresh(fmt.Sprintf("%s recovered: %d good probes over %v", g.members[r.i].Name, g.policy.RecoverProbes, g.health[r.i].hold(g.policy.RecoverHold)))
				} else if g.mode == URLTest || before == Unknown {
					g.refresh(fmt.Sprintf("latency of %s: %v", g.members[r.i].Name, r.rtt.Round(time.Millisecond)))
				}
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

// requestProbe asks the prober to probe member i at once.
func (g *Group) requestProbe(i int) {
	g.touch()
	select {
	case g.probeNow <- i:
	default: // a probe request is already queued
	}
}

// Probe fetches url through ob and returns how long the response took to
// arrive (connection set-up included, as other clients' "URL test" delay
// does). Any 2xx or 3xx status is a success; redirects are not followed.
func Probe(ctx context.Context, ob outbound.Outbound, url string, timeout time.Duration) (time.Duration, error) {
	tr := &http.Transport{
		Proxy: nil,
		// The transport dials on a goroutine of its own: a panic in the
		// member's dial is that probe's failure (see package guard).
		DialContext: func(ctx context.Context, network, addr string) (_ net.Conn, err error) {
			defer guard.Catch(ctx, &err, "probe dial")
			dst, err := flow.ParseAddr(addr)
			if err != nil {
				return nil, err
			}
			return ob.DialContext(ctx, "tcp", dst)
		},
		DisableKeepAlives: true,
		MaxIdleConns:      -1,
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("probe url: %w", err)
	}
	req.Header.Set("User-Agent", "Skiff")
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
