// Package ruleset reads the rule sets people route by — sing-box rule sets
// (source JSON, versions 1 to 3) and Clash rule-providers (behaviour
// domain, ipcidr or classical, as YAML or text) — into one compiled,
// immutable Set that tells whether a flow's destination is in it.
//
// Such lists are large ("direct for mainland China" is about 100,000
// domains and 10,000 address ranges) and are consulted for every flow, so
// a Set is built for memory and for lookups that allocate nothing: names
// are kept sorted in one string (see names), addresses as merged ranges
// (see ipRanges), and a lookup costs one binary search per label of the
// name, or one for an address.
//
// Nothing is dropped silently: an entry or rule that Skiff cannot express
// (a process rule, a GeoIP condition inside a list, an unknown field) is
// left out of the Set and listed in Skipped with its reason, so that the
// window can show it greyed. A rule with one such condition is skipped
// whole, since dropping only that condition would make it match more.
package ruleset

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"

	"github.com/skiffvpn/skiff/core/hostname"
)

// MaxSize is the largest rule-set file the decoders accept. The largest
// public lists are a few MiB; anything far beyond is not a rule set.
const MaxSize = 32 << 20

// Set is a compiled rule set: it matches a flow when any of its rules does.
// It is safe for concurrent use.
type Set struct {
	dest    matcher // every rule with only destination conditions, merged
	rules   []rule  // the others, walked in order
	skipped []Skipped
}

// Empty returns a Set that matches nothing: what a rule set stands for
// until its first download.
func Empty() *Set { return &Set{} }

// Skipped is an entry or rule left out of a Set, and why.
type Skipped struct {
	Entry  string // as written, e.g. "PROCESS-NAME,curl" or "rule 3"
	Reason string
}

// Skipped lists what was left out of s.
func (s *Set) Skipped() []Skipped { return s.skipped }

// Stats counts what a Set holds.
type Stats struct {
	Domains  int // exact names, suffixes and wildcards
	Keywords int
	Regexps  int
	Ranges   int // merged address ranges
	Rules    int // rules walked one by one (ports, network, logical)
	Bytes    int // the memory of the name and address tables
}

// Stats returns what s holds.
func (s *Set) Stats() Stats {
	d := &s.dest
	return Stats{
		Domains:  d.exact.len() + d.suffix.len() + d.below.len() + d.oneLevel.len(),
		Keywords: len(d.keywords),
		Regexps:  len(d.regexps),
		Ranges:   d.ips.len(),
		Rules:    len(s.rules),
		Bytes:    d.exact.bytes() + d.suffix.bytes() + d.below.bytes() + d.oneLevel.bytes() + 8*len(d.ips.v4) + 32*len(d.ips.v6),
	}
}

// Match reports whether a flow with metadata m matches s. The name matched
// is the destination's name, else the host sniffed or looked up for it;
// addresses are matched only when the destination is one (a name is never
// resolved to match it).
func (s *Set) Match(m *flow.Metadata) bool {
	name := m.Destination.Name
	if name == "" {
		name = m.Host
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	ip := m.Destination.IP
	if s.dest.match(name, ip) {
		return true
	}
	for i := range s.rules {
		if s.rules[i].match(m, name, ip) {
			return true
		}
	}
	return false
}

// matcher matches destinations: any of its conditions.
type matcher struct {
	exact    names // the name itself
	suffix   names // the name or any name below it
	below    names // only names below it
	oneLevel names // names exactly one label below it ("*.example.com")
	keywords []string
	regexps  []*regexp.Regexp
	ips      ipRanges
}

func (d *matcher) match(name string, ip netip.Addr) bool {
	if name != "" {
		if d.exact.has(name) || d.suffix.has(name) {
			return true
		}
		first := true
		for j := 0; j < len(name); j++ {
			if name[j] != '.' {
				continue
			}
			rest := name[j+1:]
			if d.suffix.has(rest) || d.below.has(rest) || (first && d.oneLevel.has(rest)) {
				return true
			}
			first = false
		}
		for _, k := range d.keywords {
			if strings.Contains(name, k) {
				return true
			}
		}
		for _, re := range d.regexps {
			if re.MatchString(name) {
				return true
			}
		}
	}
	return ip.IsValid() && d.ips.contains(ip)
}

func (d *matcher) empty() bool {
	return d.exact.len()+d.suffix.len()+d.below.len()+d.oneLevel.len()+len(d.keywords)+len(d.regexps)+d.ips.len() == 0
}

// rule is a rule with more than destination conditions.
type rule struct {
	dest    *matcher // nil: any destination
	ports   []PortRange
	network string // "", flow.TCP or flow.UDP
	invert  bool

	logical string // "and" or "or" with sub; "" for a plain rule
	sub     []rule
}

// PortRange is an inclusive range of destination ports; a single port has
// From == To. Package rule's rules hold it too, in this JSON form.
type PortRange struct {
	From uint16 `json:"from"`
	To   uint16 `json:"to"`
}

// InPorts reports whether p is in one of ranges.
func InPorts(ranges []PortRange, p uint16) bool {
	for _, r := range ranges {
		if p >= r.From && p <= r.To {
			return true
		}
	}
	return false
}

func (r *rule) match(m *flow.Metadata, name string, ip netip.Addr) bool {
	return r.matchPlain(m, name, ip) != r.invert
}

func (r *rule) matchPlain(m *flow.Metadata, name string, ip netip.Addr) bool {
	switch r.logical {
	case "and":
		for i := range r.sub {
			if !r.sub[i].match(m, name, ip) {
				return false
			}
		}
		return true
	case "or":
		for i := range r.sub {
			if r.sub[i].match(m, name, ip) {
				return true
			}
		}
		return false
	}
	if r.network != "" && r.network != m.Network {
		return false
	}
	if len(r.ports) > 0 && !InPorts(r.ports, m.Destination.Port) {
		return false
	}
	return r.dest == nil || r.dest.match(name, ip)
}

// spec is a rule as decoded, before compiling.
type spec struct {
	exact, suffix, below, oneLevel, keywords, regexps []string
	ips                                               []netip.Prefix
	ports                                             []PortRange
	network                                           string
	invert                                            bool
	logical                                           string
	sub                                               []spec
}

func (s *spec) destOnly() bool {
	return len(s.ports) == 0 && s.network == "" && !s.invert && s.logical == "" && s.hasDest()
}

func (s *spec) hasDest() bool {
	return len(s.exact)+len(s.suffix)+len(s.below)+len(s.oneLevel)+len(s.keywords)+len(s.regexps)+len(s.ips) > 0
}

// build compiles specs into a Set; skipped is what the decoder left out.
func build(specs []spec, skipped []Skipped) (*Set, error) {
	var all spec
	set := &Set{skipped: skipped}
	for i := range specs {
		sp := &specs[i]
		if sp.destOnly() {
			all.exact = append(all.exact, sp.exact...)
			all.suffix = append(all.suffix, sp.suffix...)
			all.below = append(all.below, sp.below...)
			all.oneLevel = append(all.oneLevel, sp.oneLevel...)
			all.keywords = append(all.keywords, sp.keywords...)
			all.regexps = append(all.regexps, sp.regexps...)
			all.ips = append(all.ips, sp.ips...)
			continue
		}
		r, err := compileRule(sp)
		if err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
		set.rules = append(set.rules, r)
	}
	d, err := compileMatcher(&all)
	if err != nil {
		return nil, err
	}
	set.dest = *d
	return set, nil
}

func compileRule(sp *spec) (rule, error) {
	r := rule{network: sp.network, invert: sp.invert, ports: sp.ports, logical: sp.logical}
	for i := range sp.sub {
		sub, err := compileRule(&sp.sub[i])
		if err != nil {
			return r, err
		}
		r.sub = append(r.sub, sub)
	}
	if sp.hasDest() {
		d, err := compileMatcher(sp)
		if err != nil {
			return r, err
		}
		r.dest = d
	}
	return r, nil
}

func compileMatcher(sp *spec) (*matcher, error) {
	d := &matcher{
		exact:    newNames(sp.exact),
		suffix:   newNames(sp.suffix),
		below:    newNames(sp.below),
		oneLevel: newNames(sp.oneLevel),
		ips:      newIPRanges(sp.ips),
	}
	seen := map[string]bool{}
	for _, k := range sp.keywords {
		if !seen[k] {
			seen[k] = true
			d.keywords = append(d.keywords, k)
		}
	}
	for _, expr := range sp.regexps {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("domain regex %q: %w", expr, err)
		}
		d.regexps = append(d.regexps, re)
	}
	return d, nil
}

// normName returns a domain in canonical form (see package hostname), or
// "" when it is not one.
func normName(s string) string {
	name, _ := hostname.Canonical(strings.TrimSpace(s))
	return name
}

// parsePrefix parses a CIDR prefix or a bare address.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, err
		}
		return netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-(p.Addr().BitLen()-p.Addr().Unmap().BitLen()), 0)).Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}
