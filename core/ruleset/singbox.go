package ruleset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
)

// ParseSingBox decodes a sing-box rule set in its source form (JSON,
// versions 1 to 3): {"version": 3, "rules": [headless rules]}, or in its
// binary form (.srs, told by its magic; see ParseSRS).
func ParseSingBox(data []byte) (*Set, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("ruleset: sing-box: %d bytes is more than a rule set can be (%d)", len(data), MaxSize)
	}
	if bytes.HasPrefix(data, []byte("SRS")) {
		return ParseSRS(data)
	}
	var doc struct {
		Version int               `json:"version"`
		Rules   []json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("ruleset: sing-box: %w", err)
	}
	if doc.Version < 1 || doc.Version > 3 {
		return nil, fmt.Errorf("ruleset: sing-box: version %d is not 1, 2 or 3", doc.Version)
	}
	specs, skipped, err := decodeRules(len(doc.Rules), func(i int) (spec, string, error) { return singBoxRule(doc.Rules[i], 0) })
	if err != nil {
		return nil, fmt.Errorf("ruleset: sing-box: %w", err)
	}
	set, err := build(specs, skipped)
	if err != nil {
		return nil, fmt.Errorf("ruleset: sing-box: %w", err)
	}
	return set, nil
}

// decodeRules decodes the n rules of a sing-box rule set, JSON or binary,
// with decode: the rules Skiff can match, and those it skips (named "rule
// N") with the reason decode gives.
func decodeRules(n int, decode func(i int) (spec, string, error)) ([]spec, []Skipped, error) {
	var specs []spec
	var skipped []Skipped
	for i := range n {
		sp, reason, err := decode(i)
		where := "rule " + strconv.Itoa(i+1)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		if reason != "" {
			skipped = append(skipped, Skipped{Entry: where, Reason: reason})
			continue
		}
		specs = append(specs, sp)
	}
	return specs, skipped, nil
}

// listable is sing-box's "one value or a list of them".
type listable[T any] []T

func (l *listable[T]) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		return json.Unmarshal(b, (*[]T)(l))
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*l = listable[T]{v}
	return nil
}

// singBoxFields are the headless-rule fields Skiff matches; the others
// that sing-box defines make the rule skipped, with this reason.
var singBoxUnsupported = map[string]string{
	"query_type":             "DNS query types are not matched by flows",
	"source_ip_cidr":         "source address conditions are not supported in rule sets yet",
	"source_port":            "source port conditions are not supported in rule sets yet",
	"source_port_range":      "source port conditions are not supported in rule sets yet",
	"process_name":           "process conditions are not supported in rule sets yet",
	"process_path":           "process conditions are not supported in rule sets yet",
	"process_path_regex":     "process conditions are not supported in rule sets yet",
	"package_name":           "Android package names do not apply on a desktop",
	"wifi_ssid":              "Wi-Fi conditions are not supported",
	"wifi_bssid":             "Wi-Fi conditions are not supported",
	"network_type":           "network type conditions are not supported",
	"network_is_expensive":   "network cost conditions are not supported",
	"network_is_constrained": "network cost conditions are not supported",
	"adguard_domain":         "AdGuard filter syntax is not supported",
}

// singBoxRule decodes one headless rule. A non-empty reason says why the
// rule is skipped.
func singBoxRule(raw json.RawMessage, depth int) (spec, string, error) {
	var sp spec
	if depth > 8 {
		return sp, "", errors.New("logical rules nested more than 8 deep")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return sp, "", err
	}
	var typ string
	if t, ok := fields["type"]; ok {
		if err := json.Unmarshal(t, &typ); err != nil {
			return sp, "", fmt.Errorf("type: %w", err)
		}
	}
	if inv, ok := fields["invert"]; ok {
		if err := json.Unmarshal(inv, &sp.invert); err != nil {
			return sp, "", fmt.Errorf("invert: %w", err)
		}
	}
	switch typ {
	case "", "default":
	case "logical":
		var l struct {
			Mode  string            `json:"mode"`
			Rules []json.RawMessage `json:"rules"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return sp, "", err
		}
		if l.Mode != "and" && l.Mode != "or" {
			return sp, "", fmt.Errorf("logical mode %q is not and or or", l.Mode)
		}
		if len(l.Rules) == 0 {
			return sp, "", errors.New("logical rule without rules")
		}
		sp.logical = l.Mode
		for _, r := range l.Rules {
			sub, reason, err := singBoxRule(r, depth+1)
			if err != nil || reason != "" {
				return sp, reason, err
			}
			sp.sub = append(sp.sub, sub)
		}
		return sp, "", nil
	default:
		return sp, "", fmt.Errorf("type %q is not default or logical", typ)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first unsupported field, by name, is the reason given
	for _, k := range keys {
		v := fields[k]
		var err error
		switch k {
		case "type", "invert":
		case "domain":
			err = names2(v, k, func(n string) { sp.exact = append(sp.exact, n) })
		case "domain_suffix":
			err = names2(v, k, func(n string) { sp.suffix = append(sp.suffix, n) }, func(n string) { sp.below = append(sp.below, n) })
		case "domain_keyword":
			var l listable[string]
			if err = json.Unmarshal(v, &l); err == nil {
				for _, s := range l {
					if s = strings.ToLower(s); s != "" {
						sp.keywords = append(sp.keywords, s)
					}
				}
			}
		case "domain_regex":
			var l listable[string]
			if err = json.Unmarshal(v, &l); err == nil {
				sp.regexps = append(sp.regexps, l...)
			}
		case "ip_cidr":
			var l listable[string]
			if err = json.Unmarshal(v, &l); err == nil {
				for _, s := range l {
					p, perr := parsePrefix(s)
					if perr != nil {
						return sp, "", fmt.Errorf("ip_cidr %q: %w", s, perr)
					}
					sp.ips = append(sp.ips, p)
				}
			}
		case "port":
			var l listable[uint16]
			if err = json.Unmarshal(v, &l); err == nil {
				for _, p := range l {
					sp.ports = append(sp.ports, PortRange{p, p})
				}
			}
		case "port_range":
			var l listable[string]
			if err = json.Unmarshal(v, &l); err == nil {
				for _, s := range l {
					pr, perr := parseRange(s, ":")
					if perr != nil {
						return sp, "", fmt.Errorf("port_range: %w", perr)
					}
					sp.ports = append(sp.ports, pr)
				}
			}
		case "network":
			var l listable[string]
			if err = json.Unmarshal(v, &l); err == nil {
				switch {
				case len(l) == 1 && (l[0] == flow.TCP || l[0] == flow.UDP):
					sp.network = l[0]
				case len(l) == 2 && l[0] != l[1] && (l[0] == flow.TCP || l[0] == flow.UDP) && (l[1] == flow.TCP || l[1] == flow.UDP):
					// both: no condition
				default:
					return sp, "", fmt.Errorf("network %q is not tcp or udp", l)
				}
			}
		default:
			if reason, ok := singBoxUnsupported[k]; ok {
				return sp, k + ": " + reason, nil
			}
			return sp, "unknown field " + strconv.Quote(k), nil
		}
		if err != nil {
			return sp, "", fmt.Errorf("%s: %w", k, err)
		}
	}
	if !sp.hasDest() && len(sp.ports) == 0 && sp.network == "" {
		return sp, "", errors.New("rule has no condition")
	}
	return sp, "", nil
}

// names2 decodes a list of domains, passing each normalized one to add, or
// to below (when given) if it starts with a dot.
func names2(v json.RawMessage, field string, add func(string), below ...func(string)) error {
	var l listable[string]
	if err := json.Unmarshal(v, &l); err != nil {
		return err
	}
	for _, s := range l {
		to := add
		d := s
		if len(below) > 0 && strings.HasPrefix(strings.TrimSpace(s), ".") {
			to, d = below[0], strings.TrimPrefix(strings.TrimSpace(s), ".")
		}
		n := normName(d)
		if n == "" {
			return fmt.Errorf("%q is not a domain name", s)
		}
		to(n)
	}
	return nil
}

// parseRange parses "from<sep>to" (either side may be empty: 1 or 65535).
func parseRange(s, sep string) (PortRange, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), sep)
	if !ok {
		hi = lo
	}
	from, to := uint64(1), uint64(65535)
	var err error
	if lo != "" {
		if from, err = strconv.ParseUint(lo, 10, 16); err != nil {
			return PortRange{}, fmt.Errorf("%q is not a port range", s)
		}
	}
	if hi != "" {
		if to, err = strconv.ParseUint(hi, 10, 16); err != nil {
			return PortRange{}, fmt.Errorf("%q is not a port range", s)
		}
	}
	if from == 0 || from > to {
		return PortRange{}, fmt.Errorf("%q is not a port range", s)
	}
	return PortRange{uint16(from), uint16(to)}, nil
}
