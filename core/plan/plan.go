// Package plan turns the saved profile into the configuration of one run of
// the core. It is the one place that decides what "connect" means — which
// servers, in which order, as which kind of group, with which rules and
// which TUN and DNS settings — so that the window, `skiff connect` and
// `skiff run --node` run the same thing. The service calls it; front ends
// send only a Request.
package plan

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/tun"
)

// Modes of a run.
const (
	ModeProxy = "proxy" // the local SOCKS5/HTTP proxy only
	ModeTUN   = "tun"   // the proxy and the system-wide VPN (TUN device, routes, DNS)
	// ModeSystemProxy is the local proxy with the desktop's proxy settings
	// pointed at it. The core runs as in ModeProxy; the user's session
	// (the window, `skiff run --system-proxy`) sets the desktop's settings
	// (package sysproxy), because they are the user's, not the service's.
	ModeSystemProxy = "system-proxy"
)

// Request is what a front end asks for when it connects. It is data only:
// the service validates every field.
type Request struct {
	Mode   string `json:"mode,omitempty"`   // ModeProxy (default), ModeSystemProxy or ModeTUN
	Target string `json:"target,omitempty"` // a node or group ID; "": the profile's selection
	Listen string `json:"listen,omitempty"` // the local proxy's loopback address; "": core.DefaultListen
	// NoIPv6 keeps IPv6 out of the tunnel (TUN mode).
	NoIPv6 bool `json:"noIPv6,omitempty"`
	// DNS is the DNS mode inside the tunnel: core.DNSFakeIP (default) or
	// core.DNSRealIP.
	DNS string `json:"dns,omitempty"`
}

// Validate checks r's fields.
func (r Request) Validate() error {
	switch r.Mode {
	case "", ModeProxy, ModeSystemProxy, ModeTUN:
	default:
		return fmt.Errorf("mode %q: want %q, %q or %q", r.Mode, ModeProxy, ModeSystemProxy, ModeTUN)
	}
	switch r.DNS {
	case "", core.DNSFakeIP, core.DNSRealIP:
	default:
		return fmt.Errorf("dns %q: want %q or %q", r.DNS, core.DNSFakeIP, core.DNSRealIP)
	}
	if r.Listen != "" {
		if err := CheckListen(r.Listen); err != nil {
			return err
		}
	}
	if len(r.Target) > 128 {
		return errors.New("target: too long")
	}
	return nil
}

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

// Combined is the routes a run uses: the user's and, as
// Routes.SubscriptionRules says, the route's subscription's own.
type Combined struct {
	Rules    []profile.Rule
	RuleSets []profile.RuleSet
	Final    string
	// Skipped says why the subscription's rules were left out, if they
	// were for a reason other than the user's choice.
	Skipped string
	// Provided names the rule sets the subscription brought: their URLs
	// are the provider's, not typed by the user (ruleset.Source.Provided).
	Provided map[string]bool
}

// Routes combines the user's routes with sub's own rules (sub may be nil).
// The subscription's rule sets are renamed "<subscription ID>/<name>" so
// that they never meet the user's names, except that one with the URL and
// format of a user's set is that set (downloaded and held once).
// SubRulesAfter: the user's rules, the subscription's, the user's final;
// SubRulesFirst: the subscription's rules, the user's, the subscription's
// final (else the user's).
func Routes(p *profile.Profile, sub *profile.Subscription) (*Combined, error) {
	if err := CheckRoutes(&p.Routes); err != nil {
		return nil, err
	}
	user := &p.Routes
	c := &Combined{Rules: user.Rules, RuleSets: user.RuleSets, Final: user.Final}
	if sub == nil || sub.Routes == nil || user.SubscriptionRules == profile.SubRulesOff {
		return c, nil
	}
	sr := sub.Routes
	if err := CheckRoutes(&profile.Routes{Rules: sr.Rules, RuleSets: sr.RuleSets}); err != nil {
		c.Skipped = "the rules of subscription " + sub.DisplayName() + ": " + err.Error()
		return c, nil
	}
	if _, err := Rules(sr.Rules, nil); err != nil {
		c.Skipped = "the rules of subscription " + sub.DisplayName() + ": " + err.Error()
		return c, nil
	}
	names := map[string]string{}
	c.RuleSets = slices.Clone(user.RuleSets)
	for _, rs := range sr.RuleSets {
		name := sub.ID + "/" + rs.Name
		for _, u := range user.RuleSets {
			if rs.URL != "" && u.URL == rs.URL && u.Format == rs.Format {
				name = u.Name
			}
		}
		names[rs.Name] = name
		if name != sub.ID+"/"+rs.Name {
			continue
		}
		rs.Name = name
		c.RuleSets = append(c.RuleSets, rs)
		if c.Provided == nil {
			c.Provided = map[string]bool{}
		}
		c.Provided[name] = true
	}
	var theirs []profile.Rule
	for _, r := range sr.Rules {
		if r.Type == "rule_set" {
			vals := make([]string, len(r.Values))
			for i, v := range r.Values {
				vals[i] = names[v]
			}
			r.Values = vals
		}
		theirs = append(theirs, r)
	}
	if user.SubscriptionRules == profile.SubRulesFirst {
		c.Rules = append(theirs, user.Rules...)
		if sr.Final != "" {
			c.Final = sr.Final
		}
	} else {
		c.Rules = append(slices.Clone(user.Rules), theirs...)
	}
	return c, nil
}

// Limits of a profile's rule sets.
const (
	MaxRuleSets        = 64
	MaxRuleSetData     = 4 << 20 // an imported file; larger lists are downloaded
	MinRuleSetInterval = time.Minute
)

// CheckRoutes checks the routes' rule sets (a name, one URL or data, a
// known format) and that every rule_set rule names one of them.
func CheckRoutes(r *profile.Routes) error {
	if len(r.RuleSets) > MaxRuleSets {
		return fmt.Errorf("rule sets: %d, at most %d", len(r.RuleSets), MaxRuleSets)
	}
	names := map[string]bool{}
	for i, rs := range r.RuleSets {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("rule set %d (%s): %s", i+1, rs.Name, fmt.Sprintf(format, a...))
		}
		switch {
		case strings.TrimSpace(rs.Name) == "" || len(rs.Name) > 128:
			return bad("a name of 1 to 128 bytes is needed")
		case names[rs.Name]:
			return bad("the name is used twice")
		case rs.URL != "" && len(rs.Data) > 0:
			return bad("give a URL or data, not both")
		case rs.URL == "" && len(rs.Data) == 0:
			return bad("no URL and no data")
		case len(rs.Data) > MaxRuleSetData:
			return bad("%d bytes of data, at most %d: serve it at a URL", len(rs.Data), MaxRuleSetData)
		case rs.Interval != 0 && time.Duration(rs.Interval) < MinRuleSetInterval:
			return bad("an interval of %s, at least %s", time.Duration(rs.Interval), MinRuleSetInterval)
		}
		if rs.URL != "" {
			u, err := url.Parse(rs.URL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(rs.URL) > 4096 {
				return bad("not an http(s) URL")
			}
		}
		if err := ruleset.CheckFormat(rs.Format); err != nil {
			return bad("%v", err)
		}
		names[rs.Name] = true
	}
	for i, pr := range r.Rules {
		if pr.Type != "rule_set" {
			continue
		}
		if len(pr.Values) == 0 {
			return fmt.Errorf("rule %d (rule_set): names no rule set", i+1)
		}
		for _, v := range pr.Values {
			if !names[v] {
				return fmt.Errorf("rule %d (rule_set): %q is not one of the rule sets", i+1, v)
			}
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

// RuleSetCache is where a run keeps the rule sets it downloads, for the
// profile kept in dir: beside it, so that they survive restarts.
func RuleSetCache(dir string) string { return filepath.Join(dir, "rulesets") }

// RuleSets turns the profile's rule sets into the core's sources (a URL an
// earlier preset wrote and that was replaced is downloaded from its
// replacement, preset.Current).
func RuleSets(in []profile.RuleSet) []ruleset.Source {
	var out []ruleset.Source
	for _, rs := range in {
		out = append(out, ruleset.Source{Name: rs.Name, URL: preset.Current(rs.URL), Data: rs.Data, Format: rs.Format, Interval: time.Duration(rs.Interval)})
	}
	return out
}

// TUN is the TUN configuration of the profile's settings over the defaults
// (core.DefaultTUNConfig: strict route on unless the profile turns it off).
//
// The kill switch is the profile's too; the crash monitor is on (the
// executable's cli.Main runs it). A fake-IP range that does not parse is
// left at the default here: CheckTUN refuses it when the profile is saved.
func TUN(s profile.TUN) core.TUNConfig {
	tc := core.DefaultTUNConfig()
	tc.Strict = s.Strict()
	tc.MTU = s.MTU
	tc.Name = s.Name
	tc.KillSwitch = s.KillSwitch
	tc.KillSwitchAllowLAN = s.KillSwitchAllowLAN
	tc.CrashMonitor = true
	if s.FakeIPRange != "" {
		tc.DNS.FakeIPRange4, tc.DNS.FakeIPRange6, _ = core.ParseFakeIPRange(s.FakeIPRange)
	}
	return tc
}

// CheckTUN checks the profile's TUN settings: the device name and MTU by
// the rules tun applies before they reach the system (tun.CheckName).
func CheckTUN(s profile.TUN) error {
	if err := tun.CheckName(s.Name); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if err := tun.CheckMTU(s.MTU); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if s.FakeIPRange != "" {
		if _, _, err := core.ParseFakeIPRange(s.FakeIPRange); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	return nil
}

// Rules turns the profile's rules into the core's, with their targets
// turned into the core's by target (nil: direct and block stay, anything
// else is the run's proxy target).
func Rules(in []profile.Rule, target func(string) string) ([]rule.Rule, error) {
	if target == nil {
		target = func(t string) string {
			if t == core.TargetDirect || t == core.TargetBlock {
				return t
			}
			return core.TargetProxy
		}
	}
	out := make([]rule.Rule, 0, len(in))
	for i, pr := range in {
		r := rule.Rule{Target: target(pr.Target)}
		bad := func(err error) error {
			return fmt.Errorf("rule %d (%s): %w", i+1, pr.Type, err)
		}
		switch pr.Type {
		case "domain":
			r.Domain = pr.Values
		case "domain_suffix":
			r.DomainSuffix = pr.Values
		case "domain_keyword":
			r.DomainKeyword = pr.Values
		case "ip_cidr":
			for _, v := range pr.Values {
				pfx, err := netip.ParsePrefix(v)
				if err != nil {
					a, aerr := netip.ParseAddr(v)
					if aerr != nil {
						return nil, bad(fmt.Errorf("%q is not an address or range", v))
					}
					pfx = netip.PrefixFrom(a, a.BitLen())
				}
				r.IPCIDR = append(r.IPCIDR, pfx)
			}
		case "port":
			ps, err := rule.ParsePorts(strings.Join(pr.Values, ","))
			if err != nil {
				return nil, bad(err)
			}
			r.Ports = ps
		case "network":
			if len(pr.Values) > 0 {
				r.Network = pr.Values[0]
			}
		case "private":
			r.Private = true
		case "rule_set":
			r.RuleSet = pr.Values
		case "process":
			r.Process = pr.Values
		default:
			return nil, bad(errors.New("unknown rule type"))
		}
		out = append(out, r)
	}
	return out, nil
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
