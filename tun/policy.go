package tun

import (
	"fmt"
	"net/netip"
	"strings"
)

// Rule is a Linux policy routing rule, as data: planned by policyLinux,
// recorded in the state file, installed and removed through netlink.
type Rule struct {
	Family   int          `json:"family"` // 4 or 6
	Priority int          `json:"priority"`
	Table    int          `json:"table,omitempty"`  // lookup this table (0 with Action)
	Action   string       `json:"action,omitempty"` // "" (lookup), "unreachable" or "prohibit"
	Dst      netip.Prefix `json:"dst,omitzero"`
	Mark     uint32       `json:"mark,omitempty"`
	Invert   bool         `json:"invert,omitempty"` // "not": matches what the rest does not
	// SuppressPrefixLen, when ≥ 0, rejects a lookup result with a prefix
	// this short or shorter (0: ignore default routes).
	SuppressPrefixLen int    `json:"suppress_prefixlength"`
	IPProto           int    `json:"ipproto,omitempty"` // 6 TCP, 17 UDP
	DPort             uint16 `json:"dport,omitempty"`
}

// String formats the rule like `ip rule`.
func (r Rule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-%d %d:", r.Family, r.Priority)
	if r.Invert {
		b.WriteString(" not")
	}
	if r.Dst.IsValid() {
		fmt.Fprintf(&b, " to %s", r.Dst)
	}
	if r.Mark != 0 {
		fmt.Fprintf(&b, " fwmark %#x", r.Mark)
	}
	if r.IPProto != 0 {
		fmt.Fprintf(&b, " ipproto %d", r.IPProto)
	}
	if r.DPort != 0 {
		fmt.Fprintf(&b, " dport %d", r.DPort)
	}
	if r.Action != "" {
		fmt.Fprintf(&b, " %s", r.Action)
	} else {
		fmt.Fprintf(&b, " lookup %d", r.Table)
	}
	if r.SuppressPrefixLen >= 0 {
		fmt.Fprintf(&b, " suppress_prefixlength %d", r.SuppressPrefixLen)
	}
	return b.String()
}

// Route is a route: Dst through the device Dev (or the gateway Gateway) in
// Table (Linux; 0 is main).
type Route struct {
	Dst     netip.Prefix `json:"dst"`
	Dev     string       `json:"dev,omitempty"`
	Gateway netip.Addr   `json:"gateway,omitzero"`
	Table   int          `json:"table,omitempty"`
}

// String formats the route like `ip route`.
func (r Route) String() string {
	s := r.Dst.String()
	if r.Gateway.IsValid() {
		s += " via " + r.Gateway.String()
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	if r.Table != 0 {
		s += fmt.Sprintf(" table %d", r.Table)
	}
	return s
}

// Ranges kept out of the tunnel.
var (
	loopback4 = netip.MustParsePrefix("127.0.0.0/8")
	loopback6 = netip.MustParsePrefix("::1/128")

	// PrivatePrefixes are the ranges ExcludePrivate keeps on the LAN.
	PrivatePrefixes = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("224.0.0.0/4"),
		netip.MustParsePrefix("255.255.255.255/32"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("ff00::/8"),
	}
)

// exclusions returns the prefixes kept out of the tunnel for family 4 or 6.
func exclusions(cfg *Config, family int) []netip.Prefix {
	var out []netip.Prefix
	add := func(p netip.Prefix) {
		if (family == 4) == p.Addr().Is4() {
			out = append(out, p.Masked())
		}
	}
	for _, p := range cfg.ExcludeServers {
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		add(p)
	}
	add(loopback4)
	add(loopback6)
	if cfg.ExcludePrivate {
		for _, p := range PrivatePrefixes {
			add(p)
		}
	}
	// The device's own subnet goes into the device even when it lies in an
	// excluded range (the default addresses are private).
	keep := out[:0]
	for _, p := range out {
		if (cfg.Addr4.IsValid() && p.Contains(cfg.Addr4.Addr()) && p.Bits() >= cfg.Addr4.Bits()) ||
			(cfg.Addr6.IsValid() && p.Contains(cfg.Addr6.Addr()) && p.Bits() >= cfg.Addr6.Bits()) {
			continue
		}
		keep = append(keep, p)
	}
	return keep
}

// policyLinux returns the policy routing for cfg: routes into the device in
// cfg.Table and the rules that choose that table. With priorities
// P, P+1, … from cfg.RulePriority:
//
//	P    fwmark M → main                                  Skiff's own sockets leave by the main table
//	P+1  fwmark M → unreachable                           …and never enter the tunnel, even offline
//	P+2  (strict) ipproto udp/tcp dport 53 → table T      DNS never leaks to the LAN
//	P+3  to <servers, loopback, private ranges> → main    exclusions
//	P+4  main, suppress_prefixlength 0                    the LAN and other specific routes win
//	P+5  → table T                                        everything else into the device
//	P+6  (strict) → prohibit                              no fall-through to main (see below)
//
// (A rule cannot say "port 53 and not marked": its "not" negates the whole
// selector, so the marked packets are sorted out first.) Without P+6 a
// socket bound to another interface (SO_BINDTODEVICE), for which table T has
// no route, would fall through to main and leave by its gateway; with it the
// lookup fails, and the kernel's last resort for a bound socket treats the
// destination as on-link, which reaches the LAN but no further. A family the
// device has no address for is, in strict mode, excluded and prohibited (no
// IPv6 leak); otherwise untouched.
//
// P+4 is there in strict mode too: the kernel checks a new route's gateway
// by looking it up through these rules, and without P+4 would find the
// device instead of the LAN, so a network change while Skiff runs (a new
// default route from DHCP) would fail. The routes it lets win are the main
// table's specific ones: the directly connected LAN, container bridges,
// other VPNs' subnets.
func policyLinux(cfg *Config, dev string) ([]Route, []Rule) {
	var routes []Route
	var rules []Rule
	P := cfg.RulePriority
	for _, fam := range []int{4, 6} {
		has := (fam == 4 && cfg.Addr4.IsValid()) || (fam == 6 && cfg.Addr6.IsValid())
		if !has && !cfg.StrictRoute {
			continue
		}
		add := func(r Rule) {
			r.Family = fam
			rules = append(rules, r)
		}
		add(Rule{Priority: P, Table: tableMain, Mark: cfg.Mark, SuppressPrefixLen: -1})
		add(Rule{Priority: P + 1, Action: "unreachable", Mark: cfg.Mark, SuppressPrefixLen: -1})
		if has {
			def := netip.MustParsePrefix("0.0.0.0/0")
			if fam == 6 {
				def = netip.MustParsePrefix("::/0")
			}
			routes = append(routes, Route{Dst: def, Dev: dev, Table: cfg.Table})
			if cfg.StrictRoute {
				for _, proto := range []int{17, 6} {
					add(Rule{Priority: P + 2, Table: cfg.Table, IPProto: proto, DPort: 53, SuppressPrefixLen: -1})
				}
			}
		}
		if has {
			for _, p := range cfg.Include {
				if (fam == 4) == p.Addr().Is4() {
					add(Rule{Priority: P + 2, Table: cfg.Table, Dst: p.Masked(), SuppressPrefixLen: -1})
				}
			}
		}
		for _, p := range exclusions(cfg, fam) {
			add(Rule{Priority: P + 3, Table: tableMain, Dst: p, SuppressPrefixLen: -1})
		}
		if has {
			add(Rule{Priority: P + 4, Table: tableMain, SuppressPrefixLen: 0})
			add(Rule{Priority: P + 5, Table: cfg.Table, SuppressPrefixLen: -1})
		}
		if cfg.StrictRoute {
			add(Rule{Priority: P + 6, Action: "prohibit", SuppressPrefixLen: -1})
		}
	}
	return routes, rules
}

// tableMain is the main routing table's number.
const tableMain = 254
