package core

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/block"
	"github.com/skiffvpn/skiff/core/outbound/direct"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/core/route"
	"github.com/skiffvpn/skiff/core/rule"
)

// Names of the targets every run has, besides the user's groups.
const (
	TargetProxy  = "proxy"  // the servers of Config.Nodes, as a failover group when there are several
	TargetDirect = "direct" // the machine's own network
	TargetBlock  = "block"  // refused
)

// ErrNoServer is returned by Start when the configuration has no server for
// the flows that go to the proxy.
var ErrNoServer = errors.New("core: no server configured")

// routing is what a run routes with: the router, the proxy target and the
// group behind it (nil with one node), and everything to close at Stop.
type routing struct {
	router  route.Router
	rules   *rule.Set
	proxy   string       // the proxy target's display name
	group   *group.Group // the failover group, when there are several nodes
	outs    []outbound.Outbound
	nodes   []outbound.Outbound // each node's outbound, in or out of the group
	targets map[string]outbound.Outbound
}

func (r *routing) close() error {
	var errs []error
	for _, o := range r.outs {
		if err := o.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// buildRouting builds the outbounds of cfg's nodes (several nodes become a
// failover group in the given order), the direct and block outbounds, and a
// rule table over them. onSwitch receives the group's switch events; log
// (may be nil) its throttle checks.
func buildRouting(cfg *Config, onSwitch func(group.Event), log *slog.Logger) (*routing, error) {
	r := &routing{targets: map[string]outbound.Outbound{
		TargetDirect: direct.New(cfg.Dialer),
		TargetBlock:  block.New(),
	}}
	var members []group.Member
	for i, n := range cfg.Nodes {
		ob, err := protocol.NewOutbound(n, cfg.Dialer)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("server %d: %w", i+1, err)
		}
		r.outs = append(r.outs, ob)
		r.nodes = append(r.nodes, ob)
		members = append(members, group.Member{Name: nodeName(n), Outbound: ob})
	}
	switch len(members) {
	case 0:
	case 1:
		r.targets[TargetProxy] = members[0].Outbound
		r.proxy = members[0].Name
	default:
		mode := cfg.Mode
		if mode == "" {
			mode = group.Failover
		}
		g, err := group.New(TargetProxy, mode, members, group.Options{Policy: cfg.Policy, OnEvent: onSwitch, Log: log})
		if err != nil {
			r.close()
			return nil, err
		}
		if mode == group.Selector && cfg.Selected != "" {
			if err := g.Select(cfg.Selected); err != nil {
				g.Close()
				return nil, fmt.Errorf("core: group: %w", err)
			}
		}
		// The group closes its members: keep only it to close.
		r.outs = []outbound.Outbound{g}
		r.group = g
		r.targets[TargetProxy] = g
		r.proxy = TargetProxy
	}
	final := cfg.Final
	if final == "" {
		final = TargetProxy
	}
	if final == TargetProxy && len(members) == 0 {
		return nil, ErrNoServer
	}
	set, err := rule.Compile(cfg.Rules, final)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("core: rules: %w", err)
	}
	r.rules = set
	r.router, err = route.NewTable(set, r.targets)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("core: rules: %w", err)
	}
	if r.proxy == "" {
		r.proxy = final
	}
	return r, nil
}
