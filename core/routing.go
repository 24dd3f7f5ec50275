package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/block"
	"github.com/skiffvpn/skiff/core/outbound/direct"
	"github.com/skiffvpn/skiff/core/process"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/core/route"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
)

// ErrNoServer is returned by Start when the configuration has no server for
// the flows that go to the proxy.
var ErrNoServer = errors.New("core: no server configured")

// routing is what a run routes with: the router, the proxy target and the
// group behind it (nil with one node), and everything to close at Stop.
type routing struct {
	// mu guards group, groups, nodes, byKey, proxy and routing, which a
	// live switch (Controller.Reselect, SetRouting) changes while flows
	// are served.
	mu       sync.Mutex
	live     *switchable // the route's outbound (targets[TargetProxy]); nil without a route
	byKey    map[string]outbound.Outbound
	dialer   outbound.Dialer
	policy   group.Policy
	log      *slog.Logger
	onSwitch func(group.Event)

	router  *route.Table
	final   string
	rules   []rule.Rule
	procs   *process.Finder     // nil unless a rule matches programs
	sets    *ruleSets           // nil without rule sets
	proxy   string              // the proxy target's display name
	routing Routing             // how router routes: its rules, or overridden (setRouting)
	group   *group.Group        // the failover group, when there are several nodes
	groups  []*group.Group      // every group: the proxy's and the targets'; closed first
	nodes   []outbound.Outbound // each node's outbound, once, in or out of groups
	targets map[string]outbound.Outbound
}

func (r *routing) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	// The groups share their members' outbounds (group.Options.Shared):
	// they stop probing first, then every outbound closes once.
	for _, g := range r.groups {
		if err := g.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, o := range r.nodes {
		if err := o.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// buildRouting builds the outbounds of cfg's nodes (several nodes become a
// failover group in the given order) and of its Targets, the direct and
// block outbounds, the rule sets (see ruleSets.load; ctx bounds their
// downloads) and a rule table over them. onSwitch receives the switch
// events of every group, the proxy's and the targets' (Event.Group is the
// target's name); without it the targets' are logged to log (may be nil),
// which also gets the throttle checks.
func buildRouting(ctx context.Context, cfg *Config, onSwitch func(group.Event), log *slog.Logger) (_ *routing, err error) {
	r := &routing{targets: map[string]outbound.Outbound{
		TargetDirect: direct.New(cfg.Dialer),
		TargetBlock:  block.New(),
	}, byKey: map[string]outbound.Outbound{}, dialer: cfg.Dialer, policy: cfg.Policy, log: log, onSwitch: onSwitch}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	built := map[*node.Node]outbound.Outbound{}
	members := func(nodes []*node.Node, what string) ([]group.Member, error) {
		var ms []group.Member
		for i, n := range nodes {
			ob := built[n]
			if ob == nil {
				var err error
				if ob, err = protocol.NewOutbound(n, cfg.Dialer); err != nil {
					return nil, fmt.Errorf("%sserver %d: %w", what, i+1, err)
				}
				built[n] = ob
				r.nodes = append(r.nodes, ob)
				r.byKey[nodeKey(n)] = ob
			}
			ms = append(ms, group.Member{Name: nodeName(n), Outbound: ob})
		}
		return ms, nil
	}
	// target makes the outbound of one target: a node alone, or a group.
	target := func(name string, ms []group.Member, mode group.Mode, selected string, onEvent func(group.Event)) (outbound.Outbound, error) {
		if len(ms) == 1 {
			return ms[0].Outbound, nil
		}
		if mode == "" {
			mode = group.Failover
		}
		g, err := group.New(name, mode, ms, group.Options{Policy: cfg.Policy, OnEvent: onEvent, Log: log, Shared: true})
		if err != nil {
			return nil, err
		}
		r.groups = append(r.groups, g)
		if mode == group.Selector && selected != "" {
			if err := g.Select(selected); err != nil {
				return nil, fmt.Errorf("core: group: %w", err)
			}
		}
		return g, nil
	}
	ms, err := members(cfg.Nodes, "")
	if err != nil {
		return nil, err
	}
	if len(ms) > 0 {
		ob, err := target(TargetProxy, ms, cfg.Mode, cfg.Selected, onSwitch)
		if err != nil {
			return nil, err
		}
		r.live = &switchable{}
		r.targets[TargetProxy] = r.live
		r.proxy = TargetProxy
		l := &liveRoute{ob: ob, name: ms[0].Name}
		if g, ok := ob.(*group.Group); ok {
			r.group, l.group = g, g
		} else {
			r.proxy = ms[0].Name
		}
		r.live.cur.Store(l)
	}
	for _, t := range cfg.Targets {
		if t.Name == "" || r.targets[t.Name] != nil || t.Name == TargetProxy {
			return nil, fmt.Errorf("core: target %q: want a name of its own (not proxy, direct, block or another target's)", t.Name)
		}
		tms, err := members(t.Nodes, "target "+t.Name+": ")
		if err != nil {
			return nil, err
		}
		if len(tms) == 0 {
			return nil, fmt.Errorf("core: target %q: no server", t.Name)
		}
		onEvent := onSwitch
		if onEvent == nil {
			onEvent = func(e group.Event) {
				if log != nil {
					log.Warn("failover", "group", e.Group, "from", e.From, "to", e.To, "reason", e.Reason)
				}
			}
		}
		ob, err := target(t.Name, tms, t.Mode, t.Selected, onEvent)
		if err != nil {
			return nil, err
		}
		r.targets[t.Name] = ob
	}
	final := cfg.Final
	if final == "" {
		final = TargetProxy
	}
	if final == TargetProxy && len(ms) == 0 {
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
			return nil, err
		}
		sets = r.sets.snapshot()
		r.sets.apply = r.setRuleSets
	}
	set, err := r.compile(sets)
	if err != nil {
		return nil, err
	}
	r.router, err = route.NewTable(set, r.targets)
	if err != nil {
		return nil, fmt.Errorf("core: rules: %w", err)
	}
	if r.proxy == "" {
		r.proxy = final
	}
	if err := r.setRouting(cfg.Routing); err != nil {
		return nil, err
	}
	return r, nil
}

// setRouting makes the router route new flows as m says: by the rules, or
// by a set that overrides them (see the Routing constants). This is the
// one place that says what each routing sends where. Global needs a
// route: ErrNoServer without one.
func (r *routing) setRouting(m Routing) error {
	m, err := ParseRouting(string(m))
	if err != nil {
		return err
	}
	var set *rule.Set
	switch m {
	case RoutingGlobal:
		if r.live == nil {
			return fmt.Errorf("%w: global routing sends flows through the route, and the run has none", ErrNoServer)
		}
		set, err = rule.Compile([]rule.Rule{{Private: true, Target: TargetDirect}}, TargetProxy)
	case RoutingDirect:
		set, err = rule.Compile(nil, TargetDirect)
	}
	if err != nil {
		return fmt.Errorf("core: routing %s: %w", m, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.router.Override(set); err != nil {
		return fmt.Errorf("core: routing %s: %w", m, err)
	}
	r.routing = m
	return nil
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

// rulesInForce returns the rules that route new flows: the run's, or the
// routing's that override them.
func (r *routing) rulesInForce() *rule.Set { return r.router.InForce() }
