package core

import (
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
