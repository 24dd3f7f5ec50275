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
	"sort"
	"strings"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/core/rule"
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
		ap, err := netip.ParseAddrPort(r.Listen)
		if err != nil || !ap.Addr().IsLoopback() {
			return fmt.Errorf("listen %q: want a loopback address and port", r.Listen)
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
		// A selector whose pick is a group runs that group, and so does
		// one with no pick whose first member is a group (Clash starts a
		// select group on its first member: a provider's "PROXY" over its
		// "Auto" runs "Auto"). Other member groups give their servers, in
		// order.
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
		ids = Members(p, g)
		switch g.Type {
		case profile.GroupURLTest:
			mode = group.URLTest
		case profile.GroupSelector:
			mode = group.Selector
			selected = g.Selected
		}
	}
	switch {
	case sel != "" && p.Group(sel) != nil:
		useGroup(p.Group(sel))
	case sel != "" && p.Node(sel) != nil:
		n := p.Node(sel)
		pl.Name, ids = n.Name(), []string{n.ID}
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
	for _, id := range ids {
		n := p.Node(id)
		if n == nil {
			continue
		}
		if n.Unsupported != "" {
			pl.Skipped = append(pl.Skipped, n.Name()+": "+n.Unsupported)
			continue
		}
		if ok, why := protocol.Supported(&n.Config); !ok {
			pl.Skipped = append(pl.Skipped, n.Name()+": "+why)
			continue
		}
		cfg := n.Config
		cfg.Name = n.Name()
		pl.Config.Nodes = append(pl.Config.Nodes, &cfg)
		pl.IDs = append(pl.IDs, n.ID)
		if id == selected {
			pl.Config.Selected = cfg.Name
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
	pl.Config.Policy.ProbeURL = p.Settings.ProbeURL
	if r.Mode == ModeTUN {
		tc := TUN(p.Settings.TUN)
		tc.IPv6 = !r.NoIPv6
		tc.DNS.Mode = r.DNS
		pl.Config.TUN = &tc
	}
	rules, err := Rules(p.Routes.Rules)
	if err != nil {
		return pl, err
	}
	pl.Config.Rules = rules
	pl.Config.Final = core.TargetProxy
	if t := p.Routes.Final; t == core.TargetDirect || t == core.TargetBlock {
		pl.Config.Final = t
	}
	return pl, nil
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
	var walk func(g *profile.Group, depth int)
	walk = func(g *profile.Group, depth int) {
		if depth > maxNesting || seen[g.ID] {
			return
		}
		seen[g.ID] = true
		for _, id := range g.Members {
			if sub := p.Group(id); sub != nil {
				walk(sub, depth+1)
			} else if !seen[id] && p.Node(id) != nil {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	walk(g, 0)
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

// CheckTUN checks the profile's TUN settings.
func CheckTUN(s profile.TUN) error {
	if s.FakeIPRange != "" {
		if _, _, err := core.ParseFakeIPRange(s.FakeIPRange); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	return nil
}

// Rules turns the profile's rules into the core's. The core has one proxy
// target (the route's servers): a rule naming a node or a group goes to it.
func Rules(in []profile.Rule) ([]rule.Rule, error) {
	out := make([]rule.Rule, 0, len(in))
	for i, pr := range in {
		r := rule.Rule{Target: core.TargetProxy}
		if pr.Target == core.TargetDirect || pr.Target == core.TargetBlock {
			r.Target = pr.Target
		}
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
