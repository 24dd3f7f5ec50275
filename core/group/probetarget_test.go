package group

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// blockingOutbound is a testOutbound whose server cannot reach some
// hosts (a probe host blocked there): a dial to one of them is refused
// after a round trip.
type blockingOutbound struct {
	testOutbound
	blocked map[string]bool
}

func (o *blockingOutbound) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if o.blocked[dst.String()] {
		time.Sleep(20 * time.Millisecond)
		return nil, errRefused
	}
	return o.testOutbound.DialContext(ctx, network, dst)
}

func probeServer(t *testing.T) (url, hostport string) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hs.Close)
	return hs.URL, strings.TrimPrefix(hs.URL, "http://")
}

// TestProbeTargetUnreachable: a probe URL the primary's server cannot
// reach does not make the primary dead: the next probe URL is tried, and
// when none answers, a primary whose flows carry data is not failed by
// its probes. A primary that carries nothing and answers no probe URL
// fails as before.
func TestProbeTargetUnreachable(t *testing.T) {
	urlA, hostA := probeServer(t)
	urlB, hostB := probeServer(t)
	_, tcp, _ := servers(t)
	for _, tc := range []struct {
		name     string
		blocked  []string
		fallback []string
		flows    bool
		wantDead bool
	}{
		{"the next URL answers", []string{hostA}, []string{urlB}, false, false},
		{"no URL answers, flows carry data", []string{hostA, hostB}, []string{urlB}, true, false},
		{"no URL answers, no flows", []string{hostA, hostB}, []string{urlB}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &blockingOutbound{blocked: map[string]bool{}}
			for _, h := range tc.blocked {
				p.blocked[h] = true
			}
			f := &testOutbound{}
			pol := fastPolicy(urlA)
			pol.ProbeURLs = tc.fallback
			pol.Interval = 30 * time.Millisecond // healthy members probed often: many chances to fail
			ev := &events{}
			g, err := New("proxy", Failover, []Member{{Name: "primary", Outbound: p}, {Name: "fallback", Outbound: f}}, Options{Policy: pol, OnEvent: ev.add})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close() })
			deadline := time.Now().Add(600 * time.Millisecond)
			if tc.flows {
				for time.Now().Before(deadline) {
					echo(t, g, tcp)
					time.Sleep(5 * time.Millisecond)
				}
			} else {
				g.touch()
				time.Sleep(time.Until(deadline))
			}
			dead := g.Members()[0].Health == Failing
			if dead != tc.wantDead {
				t.Errorf("primary failing = %v, want %v (events %+v)", dead, tc.wantDead, ev.list())
			}
			if !tc.wantDead && g.Current() != "primary" {
				t.Errorf("new flows go to %q, want primary", g.Current())
			}
		})
	}
}
