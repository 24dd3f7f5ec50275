package app

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/rule"
)

// errNoServer is returned by buildConfig when the profile has nothing to
// connect through.
var errNoServer = errors.New("no server to connect through: add a subscription or a link on Profiles")

// maxDefaultRoute bounds the servers of the route used when the profile
// selects none: the best few, not a failover group of thousands.
const maxDefaultRoute = 8

// route is what one Connect will use: the core config and, for the Home
// view, the name of the route.
type route struct {
	cfg     core.Config
	name    string   // the group's or node's name
	groupID string   // the profile group's ID when the route is a group
	ids     []string // node IDs in failover order
}

// buildConfig picks what to connect through: the profile's selection (a
// group or a node), else its first group, else every usable node with
// Hysteria2 first. Nodes the core cannot dial are left out.
func buildConfig(p *profile.Profile, prefs Prefs) (route, error) {
	var r route
	var ids []string
	switch {
	case p.Selected != "" && p.Group(p.Selected) != nil:
		g := p.Group(p.Selected)
		r.name, r.groupID, ids = g.Name, g.ID, g.Members
	case p.Selected != "" && p.Node(p.Selected) != nil:
		n := p.Node(p.Selected)
		r.name, ids = n.Name(), []string{n.ID}
	case len(p.Groups) > 0:
		r.name, r.groupID, ids = p.Groups[0].Name, p.Groups[0].ID, p.Groups[0].Members
	default:
		r.name = "all servers"
		for _, n := range sortedByPreference(p.Nodes) {
			if len(ids) == maxDefaultRoute {
				break
			}
			ids = append(ids, n.ID)
		}
	}
	var skipped []string
	for _, id := range ids {
		n := p.Node(id)
		if n == nil {
			continue // a nested group: not run by the core yet
		}
		if n.Unsupported != "" {
			skipped = append(skipped, n.Name()+": "+n.Unsupported)
			continue
		}
		if ob, err := core.NewOutbound(&n.Config, nil); err != nil {
			skipped = append(skipped, err.Error())
			continue
		} else {
			ob.Close()
		}
		cfg := n.Config
		cfg.Name = n.Name()
		r.cfg.Nodes = append(r.cfg.Nodes, &cfg)
		r.ids = append(r.ids, n.ID)
	}
	if len(r.cfg.Nodes) == 0 {
		if len(skipped) > 0 {
			return r, fmt.Errorf("none of the servers of %q can be used by this Skiff (%s): pick another on Profiles or Routes", r.name, skipped[0])
		}
		return r, errNoServer
	}
	r.cfg.Listen = prefs.listen()
	r.cfg.Policy.ProbeURL = p.Settings.ProbeURL
	if prefs.Mode == ModeTUN {
		tc := core.DefaultTUNConfig()
		tc.Strict = p.Settings.TUN.Strict()
		tc.MTU = p.Settings.TUN.MTU
		tc.IPv6 = prefs.IPv6
		tc.DNS.Mode = prefs.DNSMode
		tc.KillSwitch = p.Settings.TUN.KillSwitch
		tc.KillSwitchAllowLAN = p.Settings.TUN.KillSwitchAllowLAN
		tc.CrashMonitor = true // cli.Main runs the monitor
		if s := p.Settings.TUN.FakeIPRange; s != "" {
			var err error
			if tc.DNS.FakeIPRange4, tc.DNS.FakeIPRange6, err = core.ParseFakeIPRange(s); err != nil {
				return r, fmt.Errorf("settings: %w", err)
			}
		}
		r.cfg.TUN = &tc
	}
	rules, err := coreRules(p.Routes.Rules)
	if err != nil {
		return r, err
	}
	r.cfg.Rules = rules
	r.cfg.Final = core.TargetProxy
	if t := p.Routes.Final; t == core.TargetDirect || t == core.TargetBlock {
		r.cfg.Final = t
	}
	return r, nil
}

// coreRules turns the profile's rules into the core's. The core has one
// proxy target (the route's servers): a rule naming a node or a group goes
// to it.
func coreRules(in []profile.Rule) ([]rule.Rule, error) {
	out := make([]rule.Rule, 0, len(in))
	for i, pr := range in {
		r := rule.Rule{Target: core.TargetProxy}
		if pr.Target == core.TargetDirect || pr.Target == core.TargetBlock {
			r.Target = pr.Target
		}
		bad := func(err error) error {
			return fmt.Errorf("rule %d (%s): %w: fix it on Routes", i+1, pr.Type, err)
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

// protocolRank orders protocols for default failover: Hysteria2 first, then
// VLESS over WebSocket with TLS, then the rest.
func protocolRank(n *node.Node) int {
	switch {
	case n.Protocol == node.Hysteria2:
		return 0
	case n.Protocol == node.VLESS && n.Transport != nil && n.Transport.Type == node.TransportWS && n.TLS != nil:
		return 1
	case n.Protocol == node.VLESS:
		return 2
	}
	return 3
}

// sortedByPreference returns the usable nodes, best protocol first, keeping
// the provider's order otherwise.
func sortedByPreference(nodes []*profile.Node) []*profile.Node {
	out := make([]*profile.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.Unsupported == "" {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return protocolRank(&out[i].Config) < protocolRank(&out[j].Config) })
	return out
}

// defaultGroups proposes a failover group for every server that a source
// (a subscription, or the hand-imported nodes) offers over several
// protocols: Hysteria2 first, VLESS+WS+TLS second. Servers already covered
// by a group of the profile are left out.
func defaultGroups(p *profile.Profile) []*profile.Group {
	type key struct{ source, host string }
	var order []key
	byKey := map[key][]*profile.Node{}
	for _, n := range p.Nodes {
		if n.Unsupported != "" {
			continue
		}
		k := key{n.Subscription, strings.ToLower(n.Config.Server)}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], n)
	}
	covered := map[string]bool{}
	for _, g := range p.Groups {
		for _, m := range g.Members {
			covered[m] = true
		}
	}
	var out []*profile.Group
	for _, k := range order {
		nodes := byKey[k]
		if len(nodes) < 2 || covered[nodes[0].ID] {
			continue
		}
		sort.SliceStable(nodes, func(i, j int) bool { return protocolRank(&nodes[i].Config) < protocolRank(&nodes[j].Config) })
		g := &profile.Group{ID: "g" + nodes[0].ID, Name: k.host, Type: profile.GroupFailover}
		for _, n := range nodes {
			g.Members = append(g.Members, n.ID)
		}
		out = append(out, g)
	}
	return out
}

// protocolLabel is how a node's protocol and layers are shown:
// "Hysteria2", "VLESS+WS+TLS".
func protocolLabel(n *node.Node) string {
	var s string
	switch n.Protocol {
	case node.Hysteria2:
		s = "Hysteria2"
	case node.VLESS:
		s = "VLESS"
	case node.VMess:
		s = "VMess"
	case node.Shadowsocks:
		s = "Shadowsocks"
	case node.Trojan:
		s = "Trojan"
	case node.TUIC:
		s = "TUIC"
	case node.AnyTLS:
		s = "AnyTLS"
	default:
		s = n.Protocol
	}
	if n.Protocol == node.Hysteria2 || n.Protocol == node.TUIC {
		return s
	}
	if t := n.Transport; t != nil && t.Type != "" && t.Type != node.TransportTCP {
		s += "+" + strings.ToUpper(t.Type)
	}
	if n.TLS != nil {
		if n.TLS.Reality != nil {
			s += "+REALITY"
		} else {
			s += "+TLS"
		}
	}
	return s
}

// tunAvailable reports whether TUN mode can be offered, and if not, why in
// words the user can act on. The core runs TUN mode on Linux, macOS and
// Windows; whether this process has the rights is privilegeHint's part.
func tunAvailable() (bool, string) {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
		return true, ""
	}
	return false, "System-wide VPN (TUN) is not available on " + runtime.GOOS + ": use the local proxy (point your apps or the system proxy at the address in Settings)."
}

// privilegeHint says how to give Skiff the rights TUN needs on this OS, or
// "" when it has them.
func privilegeHint() string {
	if runtime.GOOS != "linux" {
		if runtime.GOOS == "windows" {
			return "System-wide VPN needs administrator rights: start Skiff with \"Run as administrator\"."
		}
		return "System-wide VPN needs administrator rights."
	}
	if os.Geteuid() == 0 {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "skiff"
	}
	return "System-wide VPN needs network admin rights. Either run  sudo setcap cap_net_admin+ep " + exe +
		"  once, or start the core with  pkexec " + exe + " run …"
}

// explain turns an error from the core or a subscription into plain words
// with what the user can do about it.
func explain(msg string) string {
	if msg == "" {
		return ""
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "address already in use"):
		return "Another program already uses the local proxy port. Change the port in Settings (Local proxy address), or close that program.\n(" + msg + ")"
	case strings.Contains(low, "no server configured"), strings.Contains(low, "no server to connect"):
		return "There is no server to connect through yet. Add a subscription or paste a link on Profiles."
	case strings.Contains(low, "not supported yet"):
		return "This server's protocol is not supported by this Skiff yet. Pick a Hysteria2 server on Profiles, or a failover group on Routes.\n(" + msg + ")"
	case strings.Contains(low, "operation not permitted"), strings.Contains(low, "permission denied"), strings.Contains(low, "cap_net_admin"):
		if h := privilegeHint(); h != "" {
			return h + "\n(" + msg + ")"
		}
		return "Skiff lacks the rights for this: " + msg
	case strings.Contains(low, "auth") && (strings.Contains(low, "reject") || strings.Contains(low, "fail") || strings.Contains(low, "401") || strings.Contains(low, "403")):
		return "The server rejected the password. Refresh the subscription on Profiles; if it keeps failing, check with your provider that your plan is active.\n(" + msg + ")"
	case strings.Contains(low, "certificate"):
		return "The server's certificate could not be verified. Refresh the subscription; the provider may have changed servers.\n(" + msg + ")"
	case strings.Contains(low, "timeout"), strings.Contains(low, "timed out"), strings.Contains(low, "no recent network activity"):
		return "The server did not answer in time. It may be down or blocked on this network: try another server on Profiles, or a failover group on Routes.\n(" + msg + ")"
	case strings.Contains(low, "connection refused"):
		return "The server refused the connection: it may be down. Try another server.\n(" + msg + ")"
	case strings.Contains(low, "no such host"):
		return "The server's name could not be found. Check your internet connection, or refresh the subscription.\n(" + msg + ")"
	}
	return msg
}
