package ruleset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/skiffvpn/skiff/core/flow"
)

// Clash rule-provider behaviours.
const (
	BehaviorDomain    = "domain"
	BehaviorIPCIDR    = "ipcidr"
	BehaviorClassical = "classical"
)

// ParseClash decodes a Clash (mihomo) rule-provider of the given behaviour,
// in YAML (`payload:` and a list) or text (one entry a line, # comments)
// form, told apart by the content. The binary mrs form is refused.
//
//   - domain: "example.com" is that name, "+.example.com" it and every name
//     below, ".example.com" every name below, "*.example.com" the names one
//     label below.
//   - ipcidr: CIDR prefixes or addresses.
//   - classical: "TYPE,VALUE" lines as in a Clash rules list, without a
//     target: DOMAIN, DOMAIN-SUFFIX, DOMAIN-KEYWORD, DOMAIN-REGEX, IP-CIDR,
//     IP-CIDR6, DST-PORT and NETWORK. Other types are skipped, with why.
func ParseClash(behavior string, data []byte) (*Set, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("ruleset: clash: %d bytes is more than a rule set can be (%d)", len(data), MaxSize)
	}
	if bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}) || bytes.HasPrefix(data, []byte("MRS")) {
		return nil, errors.New("ruleset: clash: the binary mrs format is not supported; use the yaml or text form of the same list")
	}
	entries, err := clashEntries(data)
	if err != nil {
		return nil, fmt.Errorf("ruleset: clash: %w", err)
	}
	var sp spec
	var specs []spec
	var skipped []Skipped
	for _, e := range entries {
		var reason string
		switch behavior {
		case BehaviorDomain:
			reason = clashDomain(&sp, e)
		case BehaviorIPCIDR:
			p, err := parsePrefix(e)
			if err != nil {
				reason = "not an address or CIDR prefix"
				break
			}
			sp.ips = append(sp.ips, p)
		case BehaviorClassical:
			var rule spec
			rule, reason = clashClassical(e)
			if reason == "" {
				specs = append(specs, rule)
			}
		default:
			return nil, fmt.Errorf("ruleset: clash: behavior %q is not domain, ipcidr or classical", behavior)
		}
		if reason != "" {
			skipped = append(skipped, Skipped{Entry: e, Reason: reason})
		}
	}
	if sp.hasDest() {
		specs = append(specs, sp)
	}
	set, err := build(specs, skipped)
	if err != nil {
		return nil, fmt.Errorf("ruleset: clash: %w", err)
	}
	return set, nil
}

// clashEntries returns the entries of a YAML or text provider.
func clashEntries(data []byte) ([]string, error) {
	if isClashYAML(data) {
		var doc struct {
			Payload []string `yaml:"payload"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			// yaml.v3 lists every element it could not decode: one line
			// each, millions for an alias bomb. The first says enough.
			msg, more, _ := strings.Cut(err.Error(), "\n")
			if more != "" {
				msg += " " + strings.TrimSpace(strings.SplitN(more, "\n", 2)[0]) + " …"
			}
			return nil, fmt.Errorf("yaml: %s", strings.TrimPrefix(msg, "yaml: "))
		}
		out := doc.Payload[:0]
		for _, e := range doc.Payload {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
		return out, nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "//") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// isClashYAML reports whether data has the top-level payload key of the
// YAML form.
func isClashYAML(data []byte) bool {
	return bytes.HasPrefix(data, []byte("payload:")) || bytes.Contains(data, []byte("\npayload:"))
}

// clashDomain adds one domain-behaviour entry to sp, or says why not.
func clashDomain(sp *spec, e string) string {
	e = strings.Trim(strings.TrimSpace(e), `'"`)
	var to *[]string
	switch {
	case strings.HasPrefix(e, "+."):
		to, e = &sp.suffix, e[2:]
	case strings.HasPrefix(e, "*."):
		to, e = &sp.oneLevel, e[2:]
	case strings.HasPrefix(e, "."):
		to, e = &sp.below, e[1:]
	default:
		to = &sp.exact
	}
	if strings.Contains(e, "*") {
		return "wildcards are supported only as the first label"
	}
	n := normName(e)
	if n == "" {
		return "not a domain name"
	}
	*to = append(*to, n)
	return ""
}

// clashClassical decodes one "TYPE,VALUE[,option]" entry.
func clashClassical(e string) (spec, string) {
	var sp spec
	parts := strings.Split(e, ",")
	typ := strings.ToUpper(strings.TrimSpace(parts[0]))
	if len(parts) < 2 {
		return sp, "no value"
	}
	v := strings.TrimSpace(parts[1])
	for _, opt := range parts[2:] {
		if o := strings.TrimSpace(opt); o != "" && o != "no-resolve" {
			return sp, fmt.Sprintf("option %q is not supported", o)
		}
	}
	switch typ {
	case "DOMAIN", "DOMAIN-SUFFIX":
		n := normName(v)
		if n == "" {
			return sp, "not a domain name"
		}
		if typ == "DOMAIN" {
			sp.exact = []string{n}
		} else {
			sp.suffix = []string{n}
		}
	case "DOMAIN-KEYWORD":
		if v == "" {
			return sp, "empty keyword"
		}
		sp.keywords = []string{strings.ToLower(v)}
	case "DOMAIN-REGEX":
		sp.regexps = []string{v}
	case "IP-CIDR", "IP-CIDR6":
		p, err := parsePrefix(v)
		if err != nil {
			return sp, "not a CIDR prefix"
		}
		sp.ips = []netip.Prefix{p}
	case "DST-PORT":
		for _, part := range strings.Split(v, "/") {
			pr, err := parseRange(part, "-")
			if err != nil {
				return sp, err.Error()
			}
			sp.ports = append(sp.ports, pr)
		}
	case "NETWORK":
		switch n := strings.ToLower(v); n {
		case flow.TCP, flow.UDP:
			sp.network = n
		default:
			return sp, "network is not tcp or udp"
		}
	case "PROCESS-NAME", "PROCESS-PATH", "PROCESS-NAME-REGEX", "PROCESS-PATH-REGEX", "UID":
		return sp, "process conditions are not supported in rule sets yet"
	case "GEOIP", "GEOSITE", "IP-ASN", "SRC-GEOIP", "SRC-IP-ASN":
		return sp, "GeoIP, GeoSite and ASN conditions inside a rule set are not supported"
	case "SRC-IP-CIDR", "SRC-PORT", "IN-PORT", "IN-TYPE", "IN-USER", "IN-NAME":
		return sp, "source and inbound conditions are not supported in rule sets yet"
	case "AND", "OR", "NOT", "SUB-RULE":
		return sp, "logical rules in a classical rule set are not supported yet"
	default:
		return sp, fmt.Sprintf("rule type %q is not known", typ)
	}
	return sp, ""
}
