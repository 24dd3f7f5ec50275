// Package rule matches flows against the user's routing rules: an ordered
// list in which the first rule that matches names the flow's target (an
// outbound or a group), and a final target takes the rest.
//
// Users paste thousands of domains into rules (ad lists, "direct for my
// country" lists), so a Set does not walk the rules for every flow: all
// plain domain and suffix conditions are compiled into one hash index that
// answers "the first rule whose domains match this name" in a few lookups
// (one per label of the name), and only the rules with other conditions are
// walked, and only those ordered before that answer.
package rule

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/process"
	"github.com/skiffvpn/skiff/core/ruleset"
)

// Rule is one routing rule. Within a rule, the destination conditions
// (Domain, DomainSuffix, DomainKeyword, IPCIDR, Private, RuleSet) match if
// any of them does; Ports, Network and Process, when given, must match as
// well. A rule with no destination condition matches every destination
// (subject to Ports, Network and Process).
type Rule struct {
	Domain        []string       `json:"domain,omitempty"`        // exact names
	DomainSuffix  []string       `json:"domainSuffix,omitempty"`  // "example.com" matches it and every name below it; a leading dot matches only names below
	DomainKeyword []string       `json:"domainKeyword,omitempty"` // substrings of the name
	IPCIDR        []netip.Prefix `json:"ipCIDR,omitempty"`        // destination addresses, IPv4 or IPv6
	Private       bool           `json:"private,omitempty"`       // destinations in private, loopback, link-local and other non-public ranges
	RuleSet       []string       `json:"ruleSet,omitempty"`       // names of rule sets (package ruleset) given to CompileWith
	Process       []string       `json:"process,omitempty"`       // programs that opened the flow: a file name ("firefox") or, with a path separator, the full path
	Ports         []PortRange    `json:"ports,omitempty"`         // destination ports
	Network       string         `json:"network,omitempty"`       // "", "tcp" or "udp"
	Target        string         `json:"target"`                  // an outbound or group name
}

// PortRange is an inclusive range of ports; a single port has From == To.
// Rule sets match the same ranges.
type PortRange = ruleset.PortRange

// Set is a compiled, immutable rule list. It is safe for concurrent use.
type Set struct {
	rules []compiled
	final string

	// exact and suffix map a lower-case name to the index of the first rule
	// that lists it as a domain or a suffix, for the rules whose only
	// conditions are domains and suffixes.
	exact  map[string]int
	suffix map[string]int
	// walk holds, in order, the indexes of every other rule.
	walk []int
}

type compiled struct {
	Rule
	sets      []*ruleset.Set
	processes *process.Finder
	exact     map[string]struct{}
	suffix    map[string]struct{}
	keywords  []string
	hasDest   bool
}

// Compile checks and compiles rules, with final as the target of flows no
// rule matches. Errors name the rule (1-based) and the field.
func Compile(rules []Rule, final string) (*Set, error) { return CompileWith(rules, final, Env{}) }

// Env is what rules may refer to beyond the flow itself.
type Env struct {
	// Sets holds the rule sets that rules name, by name. A rule naming a
	// set that Sets lacks is an error.
	Sets map[string]*ruleset.Set
	// Processes finds the program of a flow, for rules with Process
	// conditions; nil: such rules never match.
	Processes *process.Finder
}

// CompileWith is Compile for rules that name rule sets or programs.
func CompileWith(rules []Rule, final string, env Env) (*Set, error) {
	if final == "" {
		return nil, errors.New("rule: final target: empty")
	}
	s := &Set{final: final, exact: map[string]int{}, suffix: map[string]int{}}
	for i, r := range rules {
		c, err := compile(r)
		if err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
		c.processes = env.Processes
		for _, name := range r.RuleSet {
			rs, ok := env.Sets[name]
			if !ok {
				return nil, fmt.Errorf("rule %d: ruleSet: %q is not loaded", i+1, name)
			}
			c.sets = append(c.sets, rs)
		}
		c.hasDest = c.hasDest || len(c.sets) > 0
		s.rules = append(s.rules, c)
		onlyDomains := len(c.exact)+len(c.suffix) > 0 && len(c.keywords) == 0 && len(r.IPCIDR) == 0 &&
			!r.Private && len(r.RuleSet) == 0 && len(r.Process) == 0 && len(r.Ports) == 0 && r.Network == ""
		if !onlyDomains {
			s.walk = append(s.walk, i)
			continue
		}
		for d := range c.exact {
			if _, ok := s.exact[d]; !ok {
				s.exact[d] = i
			}
		}
		for d := range c.suffix {
			if _, ok := s.suffix[d]; !ok {
				s.suffix[d] = i
			}
		}
	}
	return s, nil
}

func compile(r Rule) (compiled, error) {
	c := compiled{Rule: r}
	if r.Target == "" {
		return c, errors.New("target: empty")
	}
	switch r.Network {
	case "", flow.TCP, flow.UDP:
	default:
		return c, fmt.Errorf("network: %q is not tcp or udp", r.Network)
	}
	for _, p := range r.Ports {
		if p.From > p.To || p.From == 0 {
			return c, fmt.Errorf("ports: bad range %d-%d", p.From, p.To)
		}
	}
	for _, p := range r.IPCIDR {
		if !p.IsValid() {
			return c, errors.New("ipCIDR: invalid prefix")
		}
	}
	for _, p := range r.Process {
		if strings.TrimSpace(p) == "" {
			return c, errors.New("process: empty name")
		}
	}
	var err error
	if c.exact, err = nameSet("domain", r.Domain, false); err != nil {
		return c, err
	}
	// A suffix ".example.com" matches only the names below: it is kept with
	// its dot so that the label walk in match finds it only for those.
	if c.suffix, err = nameSet("domainSuffix", r.DomainSuffix, true); err != nil {
		return c, err
	}
	for _, k := range r.DomainKeyword {
		if k = strings.ToLower(k); k != "" {
			c.keywords = append(c.keywords, k)
		}
	}
	c.hasDest = len(c.exact)+len(c.suffix)+len(c.keywords)+len(r.IPCIDR) > 0 || r.Private
	return c, nil
}

// nameSet is names normalised, nil when there are none; keepDot keeps a
// leading dot in front of the normalised name.
func nameSet(field string, names []string, keepDot bool) (map[string]struct{}, error) {
	if len(names) == 0 {
		return nil, nil
	}
	set := make(map[string]struct{}, len(names))
	for _, d := range names {
		n := normalize(d)
		if n == "" {
			return nil, fmt.Errorf("%s: %q is empty", field, d)
		}
		if keepDot && strings.HasPrefix(d, ".") {
			n = "." + n
		}
		set[n] = struct{}{}
	}
	return set, nil
}

func normalize(d string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(d), "."))
}

// Match returns the target for a flow: the first matching rule's, or the
// final one. The name matched against domain conditions is the
// destination's name, else the host sniffed or looked up for it (m.Host);
// addresses are matched only when the destination is one (names are never
// resolved for matching, so routing leaks no DNS query).
func (s *Set) Match(m *flow.Metadata) string {
	name := m.Destination.Name
	if name == "" {
		name = m.Host
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	first := len(s.rules)
	if name != "" && (len(s.exact) > 0 || len(s.suffix) > 0) {
		first = s.firstDomainRule(name)
	}
	for _, i := range s.walk {
		if i >= first {
			break
		}
		if s.rules[i].match(m, name) {
			return s.rules[i].Target
		}
	}
	if first < len(s.rules) {
		return s.rules[first].Target
	}
	return s.final
}

// firstDomainRule returns the index of the first domain-only rule matching
// name, or len(s.rules).
func (s *Set) firstDomainRule(name string) int {
	best := len(s.rules)
	if i, ok := s.exact[name]; ok {
		best = i
	}
	if i, ok := s.suffix[name]; ok && i < best {
		best = i
	}
	for j := 0; j < len(name); j++ {
		if name[j] != '.' {
			continue
		}
		if i, ok := s.suffix[name[j:]]; ok && i < best { // ".example.com" form
			best = i
		}
		if i, ok := s.suffix[name[j+1:]]; ok && i < best {
			best = i
		}
	}
	return best
}

func (c *compiled) match(m *flow.Metadata, name string) bool {
	if c.Network != "" && c.Network != m.Network {
		return false
	}
	if len(c.Ports) > 0 && !ruleset.InPorts(c.Ports, m.Destination.Port) {
		return false
	}
	if len(c.Process) > 0 && !c.matchProcess(m) {
		return false
	}
	if !c.hasDest {
		return true
	}
	if name != "" {
		if _, ok := c.exact[name]; ok {
			return true
		}
		if _, ok := c.suffix[name]; ok {
			return true
		}
		for j := 0; j < len(name); j++ {
			if name[j] != '.' {
				continue
			}
			if _, ok := c.suffix[name[j:]]; ok {
				return true
			}
			if _, ok := c.suffix[name[j+1:]]; ok {
				return true
			}
		}
		for _, k := range c.keywords {
			if strings.Contains(name, k) {
				return true
			}
		}
	}
	if ip := m.Destination.IP; ip.IsValid() {
		ip = ip.Unmap()
		for _, p := range c.IPCIDR {
			if p.Contains(ip) {
				return true
			}
		}
		if c.Private && IsPrivate(ip) {
			return true
		}
	}
	for _, rs := range c.sets {
		if rs.Match(m) {
			return true
		}
	}
	return false
}

// matchProcess reports whether the flow's program is one of c.Process,
// looking it up (once per flow: the answer stays in m) when no rule did yet.
func (c *compiled) matchProcess(m *flow.Metadata) bool {
	if m.Process == "" {
		m.Process = flow.ProcessUnknown
		if c.processes != nil {
			if info, err := c.processes.Find(m.Network, m.Source); err == nil {
				m.Process = info.Path
			}
		}
	}
	if m.Process == flow.ProcessUnknown {
		return false
	}
	base := filepath.Base(m.Process)
	for _, p := range c.Process {
		if strings.ContainsAny(p, `/\`) {
			if p == m.Process {
				return true
			}
		} else if strings.EqualFold(p, base) || strings.EqualFold(p, strings.TrimSuffix(base, ".exe")) {
			return true
		}
	}
	return false
}

// privateRanges are the non-public ranges the Private condition matches:
// RFC 1918, CGNAT, loopback, link-local, "this network", multicast and
// broadcast, the IPv6 ULA, link-local and multicast ranges. The fake-IP
// pool (198.18.0.0/15) is deliberately absent: those addresses stand for
// public names.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// PrivateRanges returns the ranges that Private matches (a copy).
func PrivateRanges() []netip.Prefix { return append([]netip.Prefix(nil), privateRanges...) }

// IsPrivate reports whether ip is in one of the ranges Private matches.
func IsPrivate(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range privateRanges {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Targets returns every target the set can return, the final one last,
// without repeats.
func (s *Set) Targets() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.rules {
		if !seen[r.Target] {
			seen[r.Target] = true
			out = append(out, r.Target)
		}
	}
	if !seen[s.final] {
		out = append(out, s.final)
	}
	return out
}
