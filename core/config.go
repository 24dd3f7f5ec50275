package core

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/skiffvpn/skiff/core/dns"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/inbound/mixed"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
)

// Config is what one run of the core needs.
type Config struct {
	// Nodes are the servers in failover order: with more than one, they
	// form the failover group "proxy" (see package group).
	Nodes []*node.Node
	// Rules route flows to "proxy", "direct", "block" or one of Targets,
	// first match wins; nil: every flow goes to Final.
	Rules []rule.Rule
	// Targets are the other servers and groups that rules name, besides
	// the route's own ("proxy"): a provider's rule that sends a site to
	// its "Hong Kong" group or to one node. A node given by the same
	// pointer here and in Nodes (or in two targets) is one outbound,
	// shared: one connection to its server.
	Targets []Target
	// RuleSets are the rule sets that Rules name (rule.Rule.RuleSet), by
	// their Name. Each is loaded at Start — decoded from its Data, or from
	// RuleSetCache, else downloaded, direct first and then through the
	// proxy — and downloaded again every Interval while the core runs. A
	// failed download keeps the list in use (Controller.RuleSets says why).
	RuleSets []ruleset.Source
	// RuleSetCache is the folder that keeps downloaded rule sets across
	// runs; "": none (they are downloaded at every Start).
	RuleSetCache string
	// Final is where flows that no rule matches go; empty: "proxy".
	Final string
	// Routing is which flows the rules route: all of them (RoutingRule,
	// the default), or none (RoutingGlobal, RoutingDirect).
	// Controller.SetRouting changes it while the core runs.
	Routing Routing
	// Mode is how the group of several Nodes picks a member; "":
	// group.Failover.
	Mode group.Mode
	// Selected is the member a group.Selector group starts with (a node's
	// name); "": the first.
	Selected string
	// Policy tunes the failover group's health checks; zero fields take
	// group.DefaultPolicy's values.
	Policy group.Policy
	// Listen is the local proxy's address (SOCKS5 and HTTP on one port).
	// Empty: DefaultListen.
	Listen string
	// AllowLAN allows a Listen address other than loopback. Without it such
	// an address is refused: anyone who can reach it could use the proxy.
	AllowLAN bool
	// ProxyAuth, when set, is asked of every client of the local proxy
	// (SOCKS5 username/password, HTTP Basic); nil: none.
	ProxyAuth *mixed.Auth
	// Dialer opens the outbounds' sockets; nil: the system's (in TUN mode,
	// the tunnel's bypass sockets).
	Dialer outbound.Dialer
	// TUN, when set, also captures all of the machine's traffic (needs root
	// or CAP_NET_ADMIN; see ErrTUNPermission).
	TUN *TUNConfig
}

// Target is a server or a group that rules route to by its Name.
type Target struct {
	Name string
	// Nodes are its servers in order: one is that server alone, several
	// a group in Mode ("": group.Failover) starting on Selected (a node's
	// name) when a selector.
	Nodes    []*node.Node
	Mode     group.Mode
	Selected string
}

// servers returns every node of cfg, of the route and of its targets,
// each once.
func (cfg *Config) servers() []*node.Node {
	out := append([]*node.Node(nil), cfg.Nodes...)
	seen := map[*node.Node]bool{}
	for _, n := range out {
		seen[n] = true
	}
	for _, t := range cfg.Targets {
		for _, n := range t.Nodes {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// DefaultListen is the local proxy's address when Config.Listen is empty.
const DefaultListen = "127.0.0.1:1080"

// Names of the targets every run has, besides the user's groups.
const (
	TargetProxy  = "proxy"  // the servers of Config.Nodes, as a failover group when there are several
	TargetDirect = "direct" // the machine's own network
	TargetBlock  = "block"  // refused
)

// Routing says how flows are routed: by the rules, or all one way. It is
// not the run's mode (proxy, system proxy, TUN: how flows are captured);
// in every routing the flows arrive as that mode captures them.
type Routing string

// The routings.
const (
	RoutingRule Routing = "rule" // the rules and their final target: the default
	// RoutingGlobal sends every flow through the route (TargetProxy),
	// whatever the rules say, but private and LAN destinations direct.
	// The servers' own connections never reach the router (the outbounds
	// dial them; in TUN mode they bypass the tunnel), as under the rules.
	RoutingGlobal Routing = "global"
	// RoutingDirect sends every flow direct. In TUN mode the flows still
	// enter the tunnel and leave on its bypass sockets, so the routes, the
	// strict route and the kill switch stay as connected, and names are
	// answered by the direct resolver.
	RoutingDirect Routing = "direct"
)

// Routings are the routings in the order front ends show them.
var Routings = []Routing{RoutingRule, RoutingGlobal, RoutingDirect}

// ParseRouting reads a routing by its name; "" is RoutingRule.
func ParseRouting(s string) (Routing, error) {
	switch r := Routing(s); r {
	case "":
		return RoutingRule, nil
	case RoutingRule, RoutingGlobal, RoutingDirect:
		return r, nil
	}
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return "", fmt.Errorf("routing %q: want %q, %q or %q", s, RoutingRule, RoutingGlobal, RoutingDirect)
}

// TUNConfig turns on TUN mode: a TUN device with routes captures all of
// the machine's traffic, a netstack turns its packets into flows, DNS
// inside the tunnel is answered by the core (fake-IP by default), and the
// outbounds' own sockets bypass the tunnel. Start from DefaultTUNConfig.
type TUNConfig struct {
	Name           string    // device name; "" for tun.DefaultName
	MTU            int       // 0 for tun.DefaultMTU
	Strict         bool      // also stop DNS and traffic from leaving by other interfaces
	ExcludePrivate bool      // keep private and LAN ranges out of the tunnel
	IPv6           bool      // give the device an IPv6 address and route IPv6 into it
	DNS            DNSConfig // the DNS seen inside the tunnel
	StateFile      string    // where route changes are recorded; "" for tun.DefaultStateFile()
	// CrashMonitor starts a monitor process that restores the routes if
	// this process crashes (package crashwatch). The executable must call
	// crashwatch.MaybeMonitor first thing (cli.Main does); a test binary
	// that does not must leave this off.
	CrashMonitor bool
	// KillSwitch blocks all traffic outside the tunnel, and keeps blocking
	// it after the run ends, however it ends, until a run (or
	// ApplyKillSwitch) with the setting off removes it (see
	// tun.KillSwitch). KillSwitchAllowLAN lets the LAN through it.
	KillSwitch         bool
	KillSwitchAllowLAN bool
}

// DefaultTUNConfig returns what the switch in the window turns on: strict
// routing, the LAN left alone, IPv6 captured, fake-IP DNS.
func DefaultTUNConfig() TUNConfig {
	return TUNConfig{Strict: true, ExcludePrivate: true, IPv6: true}
}

// fakeIPRanges returns the fake-IP pool's ranges.
func (tc *TUNConfig) fakeIPRanges() []netip.Prefix {
	p4, p6 := tc.DNS.FakeIPRange4, tc.DNS.FakeIPRange6
	if !p4.IsValid() && !p6.IsValid() {
		p4, p6 = dns.DefaultPrefix4, dns.DefaultPrefix6
	}
	var out []netip.Prefix
	for _, p := range []netip.Prefix{p4, p6} {
		if p.IsValid() {
			out = append(out, p.Masked())
		}
	}
	return out
}

// ParseFakeIPRange reads a fake-IP range setting: one or two prefixes
// (an IPv4 and an IPv6 one), separated by a comma.
func ParseFakeIPRange(s string) (p4, p6 netip.Prefix, err error) {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return p4, p6, fmt.Errorf("fake-IP range %q: %w", f, err)
		}
		switch {
		case p.Addr().Is4() && p4.IsValid(), p.Addr().Is6() && p6.IsValid():
			return p4, p6, fmt.Errorf("fake-IP range %q: one range per family", s)
		case p.Addr().Is4():
			if p.Bits() > 24 {
				return p4, p6, fmt.Errorf("fake-IP range %s: too small (at most /24)", p)
			}
			p4 = p.Masked()
		default:
			if p.Bits() > 120 {
				return p4, p6, fmt.Errorf("fake-IP range %s: too small (at most /120)", p)
			}
			p6 = p.Masked()
		}
	}
	if !p4.IsValid() && !p6.IsValid() {
		return p4, p6, fmt.Errorf("fake-IP range %q: no prefix", s)
	}
	return p4, p6, nil
}

// DNS modes for TUN mode.
const (
	// DNSFakeIP answers every name with an address from the fake-IP pool;
	// the flow to it reaches the server as the name, which the server
	// resolves. No query leaves the machine. The default.
	DNSFakeIP = "fake-ip"
	// DNSRealIP resolves names through the proxy (DNS-over-HTTPS to
	// DNSConfig.Upstream through the "proxy" target).
	DNSRealIP = "real-ip"
)

// DNSConfig is the DNS seen inside the tunnel.
type DNSConfig struct {
	Mode string // DNSFakeIP (default) or DNSRealIP
	// Upstream is the DNS server asked through the proxy in real-IP mode
	// and for record types fake-IP cannot answer, as dns.NewUpstream
	// reads it (https://, tls://, tcp://, udp:// or host[:port]); empty:
	// DefaultDNSUpstream.
	Upstream string
	// FakeIPRange4 and FakeIPRange6 are the fake-IP pool's ranges (see
	// ParseFakeIPRange); both zero: dns.DefaultPrefix4 and DefaultPrefix6.
	FakeIPRange4, FakeIPRange6 netip.Prefix
}

// DefaultDNSUpstream is the DoH server asked through the proxy. It is
// named by address, so that asking it needs no lookup.
const DefaultDNSUpstream = "https://1.1.1.1/dns-query"
