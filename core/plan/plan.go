// Package plan turns the saved profile into the configuration of one run of
// the core. It is the one place that decides what "connect" means — which
// servers, in which order, as which kind of group, with which rules and
// which TUN and DNS settings — so that the window, `skiff connect` and
// `skiff run --node` run the same thing. The service calls it; front ends
// send only a Request.
package plan

import (
	"fmt"
	"sort"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
)

// Plan is one run's configuration and, for the front ends, what it is.
type Plan struct {
	Config  core.Config
	Name    string   // the route's name: the group's or the node's
	GroupID string   // the profile group's ID when the route is a group
	IDs     []string // the node IDs in failover order
	Skipped []string // servers left out, and why
	// Targets maps each target the run's rules name, as the profile's
	// rules name it ("proxy", a node's or group's ID, a group's name in a
	// subscription's rules), to the core's target it became
	// (core.TargetProxy for the route itself and for a target that has no
	// server: Skipped says so), for the front ends to find its live state
	// (core.GroupState.Name).
	Targets map[string]string
}

// ErrNoServer is returned (wrapped) when the profile has nothing to connect
// through; it is core.ErrNoServer, so that both cross the API as one code.
var ErrNoServer = core.ErrNoServer

// maxDefaultRoute bounds the servers of the route used when the profile
// selects none: the best few, not a failover group of thousands.
const maxDefaultRoute = 8

// Build picks what to connect through: r.Target, else the profile's
// selection (a group or a node), else its first group made by the user or
// a provider, else up to eight usable nodes with Hysteria2 first (the
// groups Skiff made by itself are there to be picked, not the default). Nodes the core cannot dial are left
// out. A group keeps its saved type (failover, urltest, selector).
func Build(p *profile.Profile, r Request) (*Plan, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var err error
	pl := &Plan{}
	route := map[string]bool{} // the IDs that name the route itself
	var ids []string
	mode := group.Failover
	var selected string
	sel := p.Selected
	if r.Target != "" {
		if p.Group(r.Target) == nil && p.Node(r.Target) == nil {
			n, err := p.FindNode(r.Target)
			if err == nil {
				r.Target = n.ID
			} else if g, gerr := p.FindGroup(r.Target); gerr == nil {
				r.Target = g.ID
			} else {
				return nil, fmt.Errorf("target: %w", err)
			}
		}
		sel = r.Target
	}
	useGroup := func(g *profile.Group) {
		pl.Name, pl.GroupID = g.Name, g.ID
		var ran *profile.Group
		ran, ids, mode, selected = runGroup(p, g)
		route[ran.ID] = true
	}
	switch {
	case sel != "" && p.Group(sel) != nil:
		useGroup(p.Group(sel))
	case sel != "" && p.Node(sel) != nil:
		n := p.Node(sel)
		pl.Name, ids = n.Name(), []string{n.ID}
		route[n.ID] = true
	case firstGroup(p) != nil:
		useGroup(firstGroup(p))
	default:
		pl.Name = "all servers"
		for _, n := range SortedByPreference(p.Nodes) {
			if len(ids) == maxDefaultRoute {
				break
			}
			ids = append(ids, n.ID)
		}
	}
	if pl.GroupID != "" {
		route[pl.GroupID] = true
	}
	servers := map[string]*node.Node{} // the core's node for each profile node, shared by the route and the targets
	for _, id := range ids {
		n, why := usable(p, id, servers)
		if why != "" {
			pl.Skipped = append(pl.Skipped, why)
		}
		if n == nil {
			continue
		}
		pl.Config.Nodes = append(pl.Config.Nodes, n)
		pl.IDs = append(pl.IDs, id)
		if id == selected {
			pl.Config.Selected = n.Name
		}
	}
	if len(pl.Config.Nodes) == 0 {
		if len(pl.Skipped) > 0 {
			return pl, fmt.Errorf("%w: none of the servers of %q can be used by this Skiff (%s)", ErrNoServer, pl.Name, pl.Skipped[0])
		}
		return pl, ErrNoServer
	}
	pl.Config.Mode = mode
	pl.Config.Listen = r.Listen
	if pl.Config.Routing, err = core.ParseRouting(p.Routing); err != nil {
		return pl, err // saved by hand
	}
	if err := proxyAuth(p, r.Mode, pl); err != nil {
		return pl, err
	}
	pl.Config.Policy.ProbeURL = p.Settings.ProbeURL
	if r.Mode == ModeTUN {
		if err := CheckTUN(p.Settings.TUN); err != nil { // saved before the check, or by hand
			return pl, err
		}
		tc := TUN(p.Settings.TUN)
		tc.IPv6 = !r.NoIPv6
		tc.DNS.Mode = r.DNS
		pl.Config.TUN = &tc
	}
	var sub *profile.Subscription
	if len(pl.IDs) > 0 {
		sub = p.Subscription(p.Node(pl.IDs[0]).Subscription)
	}
	routes, err := Routes(p, sub)
	if err != nil {
		return pl, err
	}
	if routes.Skipped != "" {
		pl.Skipped = append(pl.Skipped, routes.Skipped)
	}
	cfg := &pl.Config
	tg := &targets{p: p, sub: sub, route: route, servers: servers, plan: pl, byID: map[string]string{}}
	if cfg.Rules, err = Rules(routes.Rules, tg.target); err != nil {
		return pl, err
	}
	cfg.Final = tg.target(routes.Final)
	cfg.RuleSets = RuleSets(routes.RuleSets)
	for i := range cfg.RuleSets {
		cfg.RuleSets[i].Provided = routes.Provided[cfg.RuleSets[i].Name]
	}
	return pl, nil
}

// runGroup is what running group g means: a selector whose pick is a
// group runs that group, and so does one with no pick whose first member
// is a group (Clash starts a select group on its first member: a
// provider's "PROXY" over its "Auto" runs "Auto"). Other member groups
// give their servers, in order. It returns the group run, its node IDs,
// its mode and a selector's pick.
func runGroup(p *profile.Profile, g *profile.Group) (ran *profile.Group, ids []string, mode group.Mode, selected string) {
	for range maxNesting {
		if g.Type != profile.GroupSelector {
			break
		}
		pick := g.Selected
		if pick == "" && len(g.Members) > 0 {
			pick = g.Members[0]
		}
		next := p.Group(pick)
		if next == nil {
			break
		}
		g = next
	}
	mode = group.Failover
	switch g.Type {
	case profile.GroupURLTest:
		mode = group.URLTest
	case profile.GroupSelector:
		mode = group.Selector
		selected = g.Selected
	}
	return g, Members(p, g), mode, selected
}

// usable returns the core's node for the profile's node id, made once and
// kept in servers, or nil and why not when the core cannot dial it ("" for
// an ID that is no node).
func usable(p *profile.Profile, id string, servers map[string]*node.Node) (*node.Node, string) {
	if n := servers[id]; n != nil {
		return n, ""
	}
	n := p.Node(id)
	if n == nil {
		return nil, ""
	}
	if n.Unsupported != "" {
		return nil, n.Name() + ": " + n.Unsupported
	}
	if ok, why := protocol.Supported(&n.Config); !ok {
		return nil, n.Name() + ": " + why
	}
	cfg := n.Config
	cfg.Name = n.Name()
	servers[id] = &cfg
	return &cfg, ""
}

// SortedByPreference returns the usable nodes, best protocol first, keeping
// the provider's order otherwise.
func SortedByPreference(nodes []*profile.Node) []*profile.Node {
	out := make([]*profile.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.Unsupported == "" {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Config.FailoverRank() < out[j].Config.FailoverRank() })
	return out
}
