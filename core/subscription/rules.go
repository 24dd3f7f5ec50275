package subscription

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/ruleset"
	"gopkg.in/yaml.v3"
)

// A subscription's own rules (Clash rules: and rule-providers:, sing-box
// route.rules and route.rule_set) are read into profile.SubRoutes: every
// rule either maps to the profile's rule types or is kept greyed with the
// reason, never dropped. Targets become "direct", "block", a node's name
// (Apply turns it into the node's ID) or a group's name. A group whose
// default member (the first) is DIRECT or REJECT maps to that: a Clash
// "domestic" selector starts on DIRECT.

// maxSubRules bounds the rules read from one subscription.
const maxSubRules = 100_000

// Public rule sets for GEOIP and GEOSITE conditions: SagerNet's rule-set
// branches, one binary .srs per country (sing-geoip holds countries only,
// by their two-letter codes) or per domain list (sing-geosite: v2fly's
// domain-list-community). What those lack and Clash (mihomo) configs name
// from the data mihomo loads comes from MetaCubeX's meta-rules-dat sing
// branch: GEOIP lists that are no country (telegram, netflix, …: its
// geo/geoip/<code>.srs) and GEOSITE gfw, the gfwlist (v2fly's gfw is the
// domain gfw.report alone), which is the preset's list.
const (
	geoIPSetURL     = "https://raw.githubusercontent.com/SagerNet/sing-geoip/rule-set/geoip-%s.srs"
	geoSiteSetURL   = "https://raw.githubusercontent.com/SagerNet/sing-geosite/rule-set/geosite-%s.srs"
	metaGeoIPSetURL = "https://raw.githubusercontent.com/MetaCubeX/meta-rules-dat/sing/geo/geoip/%s.srs"
)

// geoSetURL is where the public rule set of a GEOIP code or a GEOSITE
// list (lower case) is downloaded from.
func geoSetURL(kind, code string) string {
	switch {
	case kind == "geoip" && isCountry(code):
		return fmt.Sprintf(geoIPSetURL, code)
	case kind == "geoip":
		return fmt.Sprintf(metaGeoIPSetURL, code)
	case code == "gfw":
		return preset.GeositeGFWURL
	}
	return fmt.Sprintf(geoSiteSetURL, code)
}

// isCountry reports whether code is a two-letter country code.
func isCountry(code string) bool {
	return len(code) == 2 && code[0] >= 'a' && code[0] <= 'z' && code[1] >= 'a' && code[1] <= 'z'
}

// subRoutes collects a subscription's rules while they are read.
type subRoutes struct {
	r       profile.SubRoutes
	targets func(name string) (string, bool) // a Clash/sing-box target to the profile's
	sets    map[string]bool
}

func (s *subRoutes) grey(rule, reason string) {
	s.r.Greyed = append(s.r.Greyed, profile.Greyed{Rule: rule, Reason: reason})
}

// geoSet returns the name of the public rule set for a GEOIP country or a
// GEOSITE list, adding it on first use.
func (s *subRoutes) geoSet(kind, code string) (string, bool) {
	code = strings.ToLower(strings.TrimSpace(code))
	if code == "" || strings.ContainsAny(code, "/?#%\\ ") || len(code) > 64 {
		return "", false
	}
	name, u := kind+"-"+code, geoSetURL(kind, code)
	if !s.sets[name] {
		s.sets[name] = true
		s.r.RuleSets = append(s.r.RuleSets, profile.RuleSet{Name: name, URL: u, Format: ruleset.FormatSingBox, Interval: profile.Duration(ruleset.DefaultInterval)})
	}
	return name, true
}

// clashGroups maps a Clash config's proxy-groups to their default member.
func clashGroups(root *yaml.Node) map[string]string {
	out := map[string]string{}
	groups := mapValue(root, "proxy-groups")
	if groups == nil || groups.Kind != yaml.SequenceNode {
		return out
	}
	for _, g := range groups.Content {
		name, members := mapValue(g, "name"), mapValue(g, "proxies")
		if name == nil || name.Kind != yaml.ScalarNode {
			continue
		}
		first := ""
		if members != nil && members.Kind == yaml.SequenceNode && len(members.Content) > 0 && members.Content[0].Kind == yaml.ScalarNode {
			first = members.Content[0].Value
		}
		out[name.Value] = first
	}
	return out
}

// targetResolver maps a rule's target: DIRECT/REJECT (Clash) or direct and
// block outbounds (sing-box, by the tags in direct/block), a node by name,
// or a group, followed to its default member while that is a group.
func targetResolver(nodes map[string]bool, groups map[string]string, direct, block map[string]bool) func(string) (string, bool) {
	return func(t string) (string, bool) {
		seen := map[string]bool{}
		for cur := t; ; {
			switch {
			case cur == "DIRECT" || direct[cur]:
				return "direct", true
			case cur == "REJECT" || cur == "REJECT-DROP" || block[cur]:
				return "block", true
			case nodes[cur]:
				if cur == t {
					return cur, true
				}
				return t, true // a group: by its name
			}
			next, isGroup := groups[cur]
			if !isGroup {
				if cur == t {
					return "", false
				}
				return t, true // a group whose default member Skiff does not know: by its name
			}
			if next == "" || seen[cur] {
				return t, true
			}
			seen[cur] = true
			cur = next
		}
	}
}

// parseClashRules reads a Clash config's rules: and rule-providers:.
func parseClashRules(root *yaml.Node, res *Result) {
	rules := mapValue(root, "rules")
	if rules == nil || rules.Kind != yaml.SequenceNode {
		return
	}
	nodes := map[string]bool{}
	for _, n := range res.Nodes {
		nodes[n.Name] = true
	}
	s := &subRoutes{targets: targetResolver(nodes, clashGroups(root), nil, nil), sets: map[string]bool{}}
	providers := clashProviders(root, s)
	for i, n := range rules.Content {
		if i == maxSubRules {
			s.grey(fmt.Sprintf("rules %d and after", i+1), fmt.Sprintf("more than %d rules", maxSubRules))
			break
		}
		s.r.Total++
		if n.Kind != yaml.ScalarNode {
			s.grey(fmt.Sprintf("line %d", n.Line), "not a rule line")
			continue
		}
		s.clashRule(strings.TrimSpace(n.Value), providers)
	}
	res.Routes = &s.r
}

// clashProviders reads rule-providers: into rule sets; the result says
// which names were usable.
func clashProviders(root *yaml.Node, s *subRoutes) map[string]bool {
	ok := map[string]bool{}
	m := mapValue(root, "rule-providers")
	if m == nil || m.Kind != yaml.MappingNode {
		return ok
	}
	for i := 0; i+1 < len(m.Content) && i/2 < maxSubRules; i += 2 {
		name, p := m.Content[i].Value, m.Content[i+1]
		str := func(k string) string {
			if v := mapValue(p, k); v != nil && v.Kind == yaml.ScalarNode {
				return v.Value
			}
			return ""
		}
		entry := "rule-provider " + name
		var format string
		switch str("behavior") {
		case "domain":
			format = ruleset.FormatClashDomain
		case "ipcidr":
			format = ruleset.FormatClashIPCIDR
		case "classical":
			format = ruleset.FormatClashClassical
		default:
			s.grey(entry, fmt.Sprintf("behavior %q is not domain, ipcidr or classical", str("behavior")))
			continue
		}
		if str("format") == "mrs" {
			s.grey(entry, "the mrs format (mihomo's binary rule sets) is not read by Skiff")
			continue
		}
		rs := profile.RuleSet{Name: name, Format: format}
		if iv, err := strconv.Atoi(str("interval")); err == nil && iv > 0 {
			rs.Interval = profile.Duration(max(time.Duration(iv)*time.Second, time.Hour))
		}
		switch str("type") {
		case "http":
			u, err := url.Parse(str("url"))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				s.grey(entry, "its url is not an http(s) URL")
				continue
			}
			rs.URL = u.String()
		case "inline":
			payload := mapValue(p, "payload")
			if payload == nil || payload.Kind != yaml.SequenceNode {
				s.grey(entry, "an inline provider without a payload list")
				continue
			}
			var b strings.Builder
			for _, e := range payload.Content {
				if e.Kind == yaml.ScalarNode {
					b.WriteString(e.Value)
					b.WriteByte('\n')
				}
			}
			rs.Data = []byte(b.String())
		case "file":
			s.grey(entry, "a file on the provider's machine (type: file); Skiff reads rule sets from URLs or imported files only")
			continue
		default:
			s.grey(entry, fmt.Sprintf("type %q is not http or inline", str("type")))
			continue
		}
		if _, err := ruleset.Parse(format, rs.Data); rs.URL == "" && err != nil {
			s.grey(entry, err.Error())
			continue
		}
		s.r.RuleSets = append(s.r.RuleSets, rs)
		s.sets[name] = true
		ok[name] = true
	}
	return ok
}

// clashRule maps one line of rules:.
func (s *subRoutes) clashRule(line string, providers map[string]bool) {
	parts := strings.Split(line, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	kind := strings.ToUpper(parts[0])
	if kind == "MATCH" || kind == "FINAL" {
		if len(parts) < 2 {
			s.grey(line, "MATCH without a target")
			return
		}
		t, ok := s.targets(parts[1])
		if !ok {
			s.grey(line, fmt.Sprintf("target %q is not a server, group, DIRECT or REJECT of this subscription", parts[1]))
			return
		}
		s.r.Final = t
		return
	}
	switch kind {
	case "AND", "OR", "NOT", "SUB-RULE":
		s.grey(line, "logical rules (AND, OR, NOT, SUB-RULE) are not expressed by Skiff's rules yet")
		return
	}
	if len(parts) < 3 {
		s.grey(line, "want TYPE,VALUE,TARGET")
		return
	}
	value, target := parts[1], parts[2]
	t, ok := s.targets(target)
	if !ok {
		s.grey(line, fmt.Sprintf("target %q is not a server, group, DIRECT or REJECT of this subscription", target))
		return
	}
	add := func(typ string, vals ...string) {
		s.r.Rules = append(s.r.Rules, profile.Rule{Type: typ, Values: vals, Target: t})
	}
	switch kind {
	case "DOMAIN":
		add("domain", value)
	case "DOMAIN-SUFFIX":
		add("domain_suffix", value)
	case "DOMAIN-KEYWORD":
		add("domain_keyword", value)
	case "IP-CIDR", "IP-CIDR6":
		if _, err := netip.ParsePrefix(value); err != nil {
			s.grey(line, "not an address range")
			return
		}
		add("ip_cidr", value)
	case "DST-PORT":
		add("port", strings.ReplaceAll(value, "/", ","))
	case "NETWORK":
		add("network", strings.ToLower(value))
	case "PROCESS-NAME", "PROCESS-PATH":
		add("process", value)
	case "GEOIP":
		if strings.EqualFold(value, "LAN") || strings.EqualFold(value, "private") {
			add("private")
			return
		}
		fallthrough
	case "GEOSITE":
		name, ok := s.geoSet(strings.ToLower(kind), value)
		if !ok {
			s.grey(line, "not a country code or list name")
			return
		}
		add("rule_set", name)
	case "RULE-SET":
		if !providers[value] {
			s.grey(line, fmt.Sprintf("rule provider %q is not usable (see its own line)", value))
			return
		}
		add("rule_set", value)
	case "DOMAIN-REGEX":
		s.grey(line, "regular expressions are matched inside rule sets only")
	case "SRC-IP-CIDR", "SRC-PORT", "IN-PORT", "IN-TYPE", "IN-USER", "IN-NAME", "UID":
		s.grey(line, "conditions on the flow's source or inbound are not expressed by Skiff's rules")
	case "IP-SUFFIX", "IP-ASN", "SRC-GEOIP", "SRC-IP-ASN", "SRC-IP-SUFFIX", "GEOIP-ASN":
		s.grey(line, kind+" is not expressed by Skiff's rules")
	case "PROCESS-NAME-REGEX", "PROCESS-PATH-REGEX":
		s.grey(line, "programs are matched by name or path, not by regular expression")
	default:
		s.grey(line, fmt.Sprintf("rule type %s is not known to Skiff", kind))
	}
}

// sbRoute is the route object of a sing-box config.
type sbRoute struct {
	Rules   []json.RawMessage `json:"rules"`
	RuleSet []struct {
		Tag            string            `json:"tag"`
		Type           string            `json:"type"`
		Format         string            `json:"format"`
		URL            string            `json:"url"`
		UpdateInterval string            `json:"update_interval"`
		Rules          []json.RawMessage `json:"rules"`
	} `json:"rule_set"`
	Final string `json:"final"`
}

// sbRule is the part of a sing-box route rule Skiff maps; any other field
// greys the rule.
type sbRule struct {
	Domain        listable `json:"domain"`
	DomainSuffix  listable `json:"domain_suffix"`
	DomainKeyword listable `json:"domain_keyword"`
	IPCIDR        listable `json:"ip_cidr"`
	IPIsPrivate   bool     `json:"ip_is_private"`
	RuleSet       listable `json:"rule_set"`
	Port          []uint16 `json:"port"`
	PortRange     listable `json:"port_range"`
	Network       listable `json:"network"`
	ProcessName   listable `json:"process_name"`
	ProcessPath   listable `json:"process_path"`
	Geosite       listable `json:"geosite"`
	GeoIP         listable `json:"geoip"`
	Outbound      string   `json:"outbound"`
	Action        string   `json:"action"`
}

var sbRuleFields = map[string]bool{
	"domain": true, "domain_suffix": true, "domain_keyword": true, "ip_cidr": true, "ip_is_private": true,
	"rule_set": true, "port": true, "port_range": true, "network": true, "process_name": true, "process_path": true,
	"geosite": true, "geoip": true, "outbound": true, "action": true,
}

// parseSingBoxRules reads a sing-box config's route, with its outbounds'
// types and the default members of its selector and urltest outbounds.
func parseSingBoxRules(body []byte, res *Result) {
	var doc struct {
		Outbounds []struct {
			Tag       string   `json:"tag"`
			Type      string   `json:"type"`
			Default   string   `json:"default"`
			Outbounds []string `json:"outbounds"`
		} `json:"outbounds"`
		Route *sbRoute `json:"route"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Route == nil {
		if err != nil && strings.Contains(string(body), `"route"`) {
			res.Routes = &profile.SubRoutes{Greyed: []profile.Greyed{{Rule: "route", Reason: "does not decode: " + err.Error()}}}
		}
		return
	}
	outbounds := map[string][2]string{}
	for _, o := range doc.Outbounds {
		def := o.Default
		if def == "" && len(o.Outbounds) > 0 {
			def = o.Outbounds[0]
		}
		outbounds[o.Tag] = [2]string{o.Type, def}
	}
	r := *doc.Route
	nodes := map[string]bool{}
	for _, n := range res.Nodes {
		nodes[n.Name] = true
	}
	groups, direct, block := map[string]string{}, map[string]bool{}, map[string]bool{}
	for tag, o := range outbounds {
		switch o[0] {
		case "direct":
			direct[tag] = true
		case "block":
			block[tag] = true
		case "selector", "urltest":
			groups[tag] = o[1]
		}
	}
	s := &subRoutes{targets: targetResolver(nodes, groups, direct, block), sets: map[string]bool{}}
	for _, rs := range r.RuleSet {
		entry := "rule_set " + rs.Tag
		p := profile.RuleSet{Name: rs.Tag, Format: ruleset.FormatSingBox}
		if d, err := sbDuration(rs.UpdateInterval); err == nil && d > 0 {
			p.Interval = profile.Duration(max(d, time.Hour))
		}
		switch {
		case rs.Tag == "":
			s.grey("rule_set", "a rule set without a tag")
			continue
		case rs.Type == "remote":
			u, err := url.Parse(rs.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				s.grey(entry, "its url is not an http(s) URL")
				continue
			}
			p.URL = u.String()
		case rs.Type == "inline" || (rs.Type == "" && len(rs.Rules) > 0):
			b, _ := json.Marshal(map[string]any{"version": 3, "rules": rs.Rules})
			if _, err := ruleset.ParseSingBox(b); err != nil {
				s.grey(entry, err.Error())
				continue
			}
			p.Data = b
		case rs.Type == "local":
			s.grey(entry, "a file on the provider's machine (type: local); Skiff reads rule sets from URLs or imported files only")
			continue
		default:
			s.grey(entry, fmt.Sprintf("type %q is not remote or inline", rs.Type))
			continue
		}
		s.r.RuleSets = append(s.r.RuleSets, p)
		s.sets[rs.Tag] = true
	}
	for i, raw := range r.Rules {
		if i == maxSubRules {
			s.grey(fmt.Sprintf("rules %d and after", i+1), fmt.Sprintf("more than %d rules", maxSubRules))
			break
		}
		s.r.Total++
		s.singBoxRule(raw)
	}
	if r.Final != "" {
		if t, ok := s.targets(r.Final); ok {
			s.r.Final = t
		} else {
			s.grey("final "+r.Final, "not a server, group, direct or block outbound of this subscription")
		}
	}
	res.Routes = &s.r
}

// singBoxRule maps one route rule. Its destination fields (domains,
// addresses, rule sets) match if any does, which the profile says with one
// rule per field and the same target; a rule that also has port, network
// or process conditions (which sing-box ANDs with them) is greyed.
func (s *subRoutes) singBoxRule(raw json.RawMessage) {
	text := compactJSON(raw)
	var fields map[string]json.RawMessage
	var r sbRule
	if err := json.Unmarshal(raw, &fields); err != nil {
		s.grey(text, "not a JSON object")
		return
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		s.grey(text, "does not decode: "+err.Error())
		return
	}
	for k := range fields {
		if !sbRuleFields[k] {
			s.grey(text, fmt.Sprintf("the field %s is not expressed by Skiff's rules", k))
			return
		}
	}
	target := r.Outbound
	switch r.Action {
	case "", "route":
	case "reject":
		target = "REJECT"
	default:
		s.grey(text, fmt.Sprintf("action %s is not a routing decision Skiff takes from rules", r.Action))
		return
	}
	t, ok := s.targets(target)
	if !ok {
		s.grey(text, fmt.Sprintf("outbound %q is not a server, group, direct or block outbound of this subscription", target))
		return
	}
	var out []profile.Rule
	add := func(typ string, vals []string) {
		if len(vals) > 0 {
			out = append(out, profile.Rule{Type: typ, Values: vals, Target: t})
		}
	}
	add("domain", r.Domain)
	add("domain_suffix", r.DomainSuffix)
	add("domain_keyword", r.DomainKeyword)
	add("ip_cidr", r.IPCIDR)
	if r.IPIsPrivate {
		out = append(out, profile.Rule{Type: "private", Values: []string{}, Target: t})
	}
	for _, name := range r.RuleSet {
		if !s.sets[name] {
			s.grey(text, fmt.Sprintf("rule set %q is not usable (see its own line)", name))
			return
		}
	}
	add("rule_set", r.RuleSet)
	var geo []string
	for _, c := range r.GeoIP {
		if strings.EqualFold(c, "private") {
			out = append(out, profile.Rule{Type: "private", Values: []string{}, Target: t})
			continue
		}
		if name, ok := s.geoSet("geoip", c); ok {
			geo = append(geo, name)
		}
	}
	for _, c := range r.Geosite {
		if name, ok := s.geoSet("geosite", c); ok {
			geo = append(geo, name)
		}
	}
	add("rule_set", geo)
	var ports []string
	for _, p := range r.Port {
		ports = append(ports, strconv.Itoa(int(p)))
	}
	for _, pr := range r.PortRange {
		ports = append(ports, strings.ReplaceAll(pr, ":", "-"))
	}
	process := append(append([]string(nil), r.ProcessName...), r.ProcessPath...)
	other := 0
	for _, n := range []int{len(ports), len(r.Network), len(process)} {
		if n > 0 {
			other++
		}
	}
	switch {
	case len(out) > 0 && other > 0, other > 1:
		s.grey(text, "combines conditions (destination, port, network, program) that Skiff's rules keep one to a rule")
		return
	case len(r.Network) > 1:
		s.grey(text, "more than one network")
		return
	}
	add("port", ports)
	add("network", r.Network)
	add("process", process)
	if len(out) == 0 {
		out = append(out, profile.Rule{Type: "port", Values: []string{"1-65535"}, Target: t}) // no condition: every flow
	}
	s.r.Rules = append(s.r.Rules, out...)
}

// sbDuration reads a sing-box duration: Go's, or whole days ("1d").
func sbDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 3650 {
			return 0, fmt.Errorf("duration %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

func compactJSON(raw json.RawMessage) string {
	var b strings.Builder
	for _, c := range string(raw) {
		if c != '\n' && c != '\t' && c != '\r' {
			b.WriteRune(c)
		}
	}
	out := b.String()
	if len(out) > 300 {
		out = out[:300] + "…"
	}
	return out
}

// applyRoutes stores res's rules on sub, with rule targets naming this
// subscription's nodes turned into the nodes' IDs.
func applyRoutes(sub *profile.Subscription, res *Result, nodes []*profile.Node) {
	if res.Routes == nil {
		sub.Routes = nil
		return
	}
	ids := map[string]string{}
	for _, n := range nodes {
		if _, dup := ids[n.Config.Name]; !dup {
			ids[n.Config.Name] = n.ID
		}
	}
	r := *res.Routes
	r.Rules = append([]profile.Rule(nil), r.Rules...)
	for i := range r.Rules {
		if id, ok := ids[r.Rules[i].Target]; ok {
			r.Rules[i].Target = id
		}
	}
	if id, ok := ids[r.Final]; ok {
		r.Final = id
	}
	sub.Routes = &r
}
