package rule

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// parsePrefix parses a CIDR prefix or a bare address (as a /32 or /128).
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ParsePorts parses "443", "8000-9000" and comma-separated lists of them.
func ParsePorts(s string) ([]PortRange, error) {
	var out []PortRange
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		from, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		if err != nil || from == 0 {
			return nil, fmt.Errorf("rule: ports: %q is not a port", part)
		}
		to := from
		if isRange {
			if to, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 16); err != nil || to < from {
				return nil, fmt.Errorf("rule: ports: %q is not a range", part)
			}
		}
		out = append(out, PortRange{From: uint16(from), To: uint16(to)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("rule: ports: %q is empty", s)
	}
	return out, nil
}
