package plan

import (
	"errors"
	"fmt"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

// Why a rule's target cannot be routed to (CheckRuleTarget). A run sends
// the flows of such a rule to the route's servers and says so in
// Plan.Skipped.
var (
	ErrTargetMissing  = errors.New("no such node or group")
	ErrTargetUnusable = errors.New("none of its servers can be used by this Skiff")
)

// CheckRuleTarget says why rule target t cannot be routed to: a node or
// group that no longer exists (ErrTargetMissing) or one none of whose
// servers the core can dial (ErrTargetUnusable), wrapped with t; nil for a
// target a run routes to. sub is the subscription whose rule it is (its
// rules name its groups by name), nil for the user's rules.
//
// CheckRuleTarget and RuleTargets are for front ends: they judge a node by
// the verdict the profile keeps (profile.Node.Unsupported, which imports
// and refreshes set from protocol.Unusable) and build no protocol client;
// Build asks the protocols again.
func CheckRuleTarget(p *profile.Profile, sub *profile.Subscription, t string) error {
	switch t {
	case "", core.TargetProxy, core.TargetDirect, core.TargetBlock:
		return nil
	}
	tg := &targets{p: p, sub: sub, servers: map[string]*node.Node{}, saved: true}
	_, _, err := tg.resolve(t)
	return err
}

// Kinds of RuleTarget.
const (
	TargetKindBuiltin = "builtin" // direct, block, or proxy (the route's servers)
	TargetKindGroup   = "group"
	TargetKindNode    = "node"
)

// RuleTarget is a target a user's rule may name.
type RuleTarget struct {
	ID   string // what profile.Rule.Target saves: core.TargetDirect, core.TargetBlock, core.TargetProxy, a group's or a node's ID
	Kind string // one of the TargetKind* constants
	Name string // the group's or node's name; "" for the builtins
	// Subscription is the ID of the subscription whose import made the
	// group or node; "": the user's, or one imported by hand.
	Subscription string
}

// RuleTargets lists every target a user's rule may name, in the order an
// editor offers them: direct, block and proxy, then each group, then each
// node, in the profile's order, those that CheckRuleTarget refuses left out.
func RuleTargets(p *profile.Profile) []RuleTarget {
	out := []RuleTarget{
		{ID: core.TargetDirect, Kind: TargetKindBuiltin},
		{ID: core.TargetBlock, Kind: TargetKindBuiltin},
		{ID: core.TargetProxy, Kind: TargetKindBuiltin},
	}
	tg := &targets{p: p, servers: map[string]*node.Node{}, saved: true}
	for _, g := range p.Groups {
		if _, _, err := tg.resolve(g.ID); err == nil {
			out = append(out, RuleTarget{ID: g.ID, Kind: TargetKindGroup, Name: g.Name, Subscription: g.Subscription})
		}
	}
	for _, n := range p.Nodes {
		if n.Unsupported == "" {
			out = append(out, RuleTarget{ID: n.ID, Kind: TargetKindNode, Name: n.Name(), Subscription: n.Subscription})
		}
	}
	return out
}

// targets turns the targets of a run's rules into the core's: direct and
// block are themselves; the route's own group or node, and "proxy", are
// the run's proxy target; another node or group of the profile (by ID, or
// a group of the route's subscription by the name its rules give) becomes
// a core.Target of its own, so that a provider's rule for its "Hong Kong"
// group sends those flows there. A target that is none of these, or has no
// server the core can use, is the proxy target (and is said in Skipped).
type targets struct {
	p       *profile.Profile
	sub     *profile.Subscription // the route's subscription, or nil
	route   map[string]bool
	servers map[string]*node.Node
	plan    *Plan
	byID    map[string]string // profile ID → the core target's name
	saved   bool              // judge nodes by the profile's verdict only (CheckRuleTarget)
}

// usable is the package's usable, or with saved the profile's verdict on
// node id (its node is then the profile's config, not to be run).
func (tg *targets) usable(id string) (*node.Node, string) {
	if !tg.saved {
		return usable(tg.p, id, tg.servers)
	}
	n := tg.p.Node(id)
	switch {
	case n == nil:
		return nil, ""
	case n.Unsupported != "":
		return nil, n.Name() + ": " + n.Unsupported
	}
	return &n.Config, ""
}

func (tg *targets) target(t string) string {
	name := tg.name(t)
	if tg.plan.Targets == nil {
		tg.plan.Targets = map[string]string{}
	}
	tg.plan.Targets[t] = name
	return name
}

// name is the core's target for rule target t.
func (tg *targets) name(t string) string {
	switch {
	case t == core.TargetDirect || t == core.TargetBlock:
		return t
	case t == "" || t == core.TargetProxy || tg.route[t]:
		return core.TargetProxy
	}
	if name, ok := tg.byID[t]; ok {
		return name
	}
	ct, id, err := tg.resolve(t)
	switch {
	case err != nil:
		tg.plan.Skipped = append(tg.plan.Skipped, err.Error()+"; its flows use the route's servers")
		tg.byID[t] = core.TargetProxy
		return core.TargetProxy
	case ct.Name == core.TargetProxy:
		tg.byID[t] = core.TargetProxy
		return core.TargetProxy
	}
	ct.Name = tg.uniqueName(ct.Name)
	tg.plan.Config.Targets = append(tg.plan.Config.Targets, ct)
	tg.byID[t], tg.byID[id] = ct.Name, ct.Name
	return ct.Name
}

// resolve returns the core target that rule target t (none of direct,
// block and proxy) names, not yet given a name of its own, and the
// profile ID of its node or group: a group that runs the route (as a
// selector's pick) is core.TargetProxy. Or why t names no target.
func (tg *targets) resolve(t string) (ct core.Target, id string, err error) {
	id = t
	var skipped []string
	if n := tg.p.Node(t); n != nil {
		sn, why := tg.usable(n.ID)
		if sn != nil {
			ct.Name, ct.Nodes = n.Name(), []*node.Node{sn}
		} else if why != "" {
			skipped = append(skipped, why)
		}
	} else if g := tg.group(t); g != nil {
		id = g.ID
		ran, ids, mode, selected := runGroup(tg.p, g)
		if tg.route[g.ID] || tg.route[ran.ID] {
			return core.Target{Name: core.TargetProxy}, id, nil
		}
		ct.Name, ct.Mode = g.Name, mode
		for _, mid := range ids {
			sn, why := tg.usable(mid)
			if why != "" {
				skipped = append(skipped, why)
			}
			if sn != nil {
				ct.Nodes = append(ct.Nodes, sn)
				if mid == selected {
					ct.Selected = sn.Name
				}
				if tg.saved {
					break // one usable server is enough to tell (RuleTargets, CheckRuleTarget)
				}
			}
		}
	}
	if len(ct.Nodes) == 0 {
		if len(skipped) > 0 {
			return ct, id, fmt.Errorf("rule target %q: %w (%s)", t, ErrTargetUnusable, skipped[0])
		}
		return ct, id, fmt.Errorf("rule target %q: %w", t, ErrTargetMissing)
	}
	return ct, id, nil
}

// group returns the profile's group of ID t, else the group of the route's
// subscription named t (its rules name groups as the provider does).
func (tg *targets) group(t string) *profile.Group {
	if g := tg.p.Group(t); g != nil {
		return g
	}
	if tg.sub == nil {
		return nil
	}
	for _, g := range tg.p.Groups {
		if g.Subscription == tg.sub.ID && g.Name == t {
			return g
		}
	}
	return nil
}

// uniqueName returns name, or name with a number, so that it is none of
// the core's own targets' names and no other target's.
func (tg *targets) uniqueName(name string) string {
	taken := func(s string) bool {
		if s == "" || s == core.TargetProxy || s == core.TargetDirect || s == core.TargetBlock {
			return true
		}
		for _, t := range tg.plan.Config.Targets {
			if t.Name == s {
				return true
			}
		}
		return false
	}
	out := name
	for i := 2; taken(out); i++ {
		out = fmt.Sprintf("%s (%d)", name, i)
	}
	return out
}

// firstGroup is the first group of p that the user or a provider made.
func firstGroup(p *profile.Profile) *profile.Group {
	for _, g := range p.Groups {
		if g.Origin != profile.OriginAuto {
			return g
		}
	}
	return nil
}

// maxNesting bounds how deep groups of groups are followed.
const maxNesting = 8

// Members returns the node IDs of group g in order, the nodes of member
// groups in their place (each node once; a group that contains itself, or
// nesting deeper than maxNesting, adds nothing more).
func Members(p *profile.Profile, g *profile.Group) []string {
	var out []string
	seen := map[string]bool{}
	// p.Node and p.Group search the lists: a group of thousands of nodes
	// looks its members up in sets instead.
	nodes := make(map[string]bool, len(p.Nodes))
	for _, n := range p.Nodes {
		nodes[n.ID] = true
	}
	groups := make(map[string]*profile.Group, len(p.Groups))
	for _, sg := range p.Groups {
		if groups[sg.ID] == nil { // the first of an ID, as p.Group
			groups[sg.ID] = sg
		}
	}
	var walk func(g *profile.Group, depth int)
	walk = func(g *profile.Group, depth int) {
		if depth > maxNesting || seen[g.ID] {
			return
		}
		seen[g.ID] = true
		for _, id := range g.Members {
			if sub := groups[id]; sub != nil {
				walk(sub, depth+1)
			} else if !seen[id] && nodes[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	walk(g, 0)
	return out
}
