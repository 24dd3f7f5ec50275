package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/block"
	"github.com/skiffvpn/skiff/core/outbound/direct"
	"github.com/skiffvpn/skiff/core/process"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/core/route"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
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
	router  *route.Table
	final   string
	rules   []rule.Rule
	procs   *process.Finder // nil unless a rule matches programs
	sets    *ruleSets       // nil without rule sets
	proxy   string          // the proxy target's display name
	group   *group.Group    // the failover group, when there are several nodes
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
// failover group in the given order), the direct and block outbounds, the
// rule sets (see ruleSets.load; ctx bounds their downloads) and a rule
// table over them. onSwitch receives the group's switch events; log (may
// be nil) its throttle checks.
func buildRouting(ctx context.Context, cfg *Config, onSwitch func(group.Event), log *slog.Logger) (*routing, error) {
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
	r.final, r.rules = final, cfg.Rules
	for _, ru := range cfg.Rules {
		if len(ru.Process) > 0 {
			r.procs = process.New()
			break
		}
	}
	var sets map[string]*ruleset.Set
	if len(cfg.RuleSets) > 0 {
		r.sets = newRuleSets(cfg, r.targets, log)
		if err := r.sets.load(ctx); err != nil {
			r.close()
			return nil, err
		}
		sets = r.sets.snapshot()
		r.sets.apply = r.setRuleSets
	}
	set, err := r.compile(sets)
	if err != nil {
		r.close()
		return nil, err
	}
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

// compile compiles the run's rules over sets.
func (r *routing) compile(sets map[string]*ruleset.Set) (*rule.Set, error) {
	set, err := rule.CompileWith(r.rules, r.final, rule.Env{Sets: sets, Processes: r.procs})
	if err != nil {
		return nil, fmt.Errorf("core: rules: %w", err)
	}
	return set, nil
}

// setRuleSets puts rules over new lists of the rule sets in force.
func (r *routing) setRuleSets(sets map[string]*ruleset.Set) error {
	set, err := r.compile(sets)
	if err != nil {
		return err
	}
	return r.router.SetRules(set)
}

// currentRules returns the rules in force.
func (r *routing) currentRules() *rule.Set { return r.router.Rules() }
