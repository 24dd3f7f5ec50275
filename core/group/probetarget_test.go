package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
)

// blockingOutbound is a testOutbound whose server cannot reach some
// hosts (a probe host blocked there): a dial to one of them is refused
// after a round trip, with a reset (errRefused), or with the server's
// word that it could not reach the host (says).
type blockingOutbound struct {
	testOutbound
	blocked map[string]bool
	says    bool
}

// errTargetRefused is how a Hysteria2 client's dial fails when its server
// answered that it could not reach the destination.
var errTargetRefused = fmt.Errorf("refused by server: %q: %w", "lookup: NXDOMAIN", outbound.ErrTargetRefused)

func (o *blockingOutbound) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if o.blocked[dst.String()] {
		time.Sleep(20 * time.Millisecond)
		if o.says {
			return nil, errTargetRefused
		}
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
		says     bool // the server answers that it cannot reach the URLs
		wantDead bool
	}{
		{"the next URL answers", []string{hostA}, []string{urlB}, false, false, false},
		{"no URL answers, flows carry data", []string{hostA, hostB}, []string{urlB}, true, false, false},
		{"no URL answers, no flows", []string{hostA, hostB}, []string{urlB}, false, false, true},
		{"the server says it cannot reach any URL, no flows", []string{hostA, hostB}, []string{urlB}, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &blockingOutbound{blocked: map[string]bool{}, says: tc.says}
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

// TestTargetRefusedIsNotTheMember: a live flow whose destination the
// primary's server answers it cannot reach (its DNS fails there, as the
// exit check's 1.1.1.1 did in an offline lab) leaves the primary healthy
// and in use; a reset from the primary still fails it.
func TestTargetRefusedIsNotTheMember(t *testing.T) {
	probe, _ := probeServer(t)
	_, tcp, _ := servers(t)
	for _, tc := range []struct {
		name     string
		says     bool
		wantDead bool
	}{
		{"the server says the destination failed", true, false},
		{"the server resets", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &blockingOutbound{blocked: map[string]bool{"203.0.113.1:443": true}, says: tc.says}
			f := &blockingOutbound{blocked: map[string]bool{"203.0.113.1:443": true}, says: true}
			ev := &events{}
			g, err := New("proxy", Failover, []Member{{Name: "primary", Outbound: p}, {Name: "fallback", Outbound: f}}, Options{Policy: fastPolicy(probe), OnEvent: ev.add})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close() })
			echo(t, g, tcp)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err = g.DialContext(ctx, "tcp", flow.AddrFromAddrPort(netip.MustParseAddrPort("203.0.113.1:443")))
			if err == nil {
				t.Fatal("a dial to a destination no server reaches succeeded")
			}
			if tc.says && !errors.Is(err, outbound.ErrTargetRefused) {
				t.Errorf("dial error %v does not wrap ErrTargetRefused", err)
			}
			left := false
			for _, e := range ev.list() {
				left = left || e.From == "primary"
			}
			if left != tc.wantDead {
				t.Errorf("switched from the primary = %v, want %v (events %+v)", left, tc.wantDead, ev.list())
			}
			if !tc.wantDead {
				if h := g.Members()[0].Health; h != Healthy {
					t.Errorf("primary's health = %v, want healthy", h)
				}
				if g.Current() != "primary" {
					t.Errorf("new flows go to %q, want primary", g.Current())
				}
				echo(t, g, tcp)
			}
		})
	}
}
