package group

import (
	"context"
	"errors"
	"time"

	"github.com/skiffvpn/skiff/core/outbound"
)

// A probe URL the member's server cannot reach (its host blocked there,
// or no DNS on the server's side) says nothing about the member: flows go
// through it all the while. So a failed probe is tried again at the next
// probe URL (Policy.ProbeURLs), and a member whose flows received bytes
// since its last probe is not failed by probes at all: its live dials and
// flows judge it (and the throttle check its goodput).

// defaultProbeURLs are tried, in order, after Policy.ProbeURL fails: other
// companies' 204 endpoints, so that one blocked host is not a dead member.
var defaultProbeURLs = []string{
	"http://www.gstatic.com/generate_204",
	"http://detectportal.firefox.com/success.txt",
}

// probeMember probes member i at the policy's probe URL, then at the next
// ones while they fail; it returns the first success, else a failure in
// which the server answered (outbound.ErrTargetRefused: it is up), else
// the first URL's failure.
func (g *Group) probeMember(ctx context.Context, i int) (time.Duration, error) {
	ob := g.members[i].Outbound
	rtt, err := Probe(ctx, ob, g.policy.ProbeURL, g.policy.ProbeTimeout)
	if err == nil {
		return rtt, nil
	}
	for _, u := range g.policy.ProbeURLs {
		if u == g.policy.ProbeURL || ctx.Err() != nil {
			continue
		}
		r, e := Probe(ctx, ob, u, g.policy.ProbeTimeout)
		if e == nil {
			return r, nil
		}
		if errors.Is(e, outbound.ErrTargetRefused) && !errors.Is(err, outbound.ErrTargetRefused) {
			err = e
		}
	}
	return 0, err
}

// carried reports whether member i's flows received bytes since the last
// call for it (*seen holds what they had then). Probes do not count: they
// dial the member's outbound, not the metered streams.
func (g *Group) carried(i int, seen *int64) bool {
	rx := g.meters[i].rx.Load()
	c := rx > *seen
	*seen = rx
	return c
}
