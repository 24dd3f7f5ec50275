package hysteria2

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// portRange is an inclusive range of UDP ports.
type portRange struct{ lo, hi uint16 }

// portSet is the server's ports for port hopping, as in "443,5000-6000".
type portSet []portRange

// parsePorts parses a comma-separated list of ports and port ranges
// ("443", "5000-6000", "443,5000-6000"). Spaces around items are allowed.
func parsePorts(s string) (portSet, error) {
	var set portSet
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("ports %q: empty item", s)
		}
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parsePort(lo)
		if err != nil {
			return nil, fmt.Errorf("ports %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = parsePort(hi); err != nil {
				return nil, fmt.Errorf("ports %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("ports %q: range %s runs backwards", s, item)
			}
		}
		set = append(set, portRange{a, b})
	}
	return set, nil
}

func parsePort(s string) (uint16, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return uint16(n), nil
}

// size is the number of ports in the set, counting a port listed twice
// twice.
func (s portSet) size() int {
	n := 0
	for _, r := range s {
		n += int(r.hi-r.lo) + 1
	}
	return n
}

// pick returns a port chosen uniformly from the set.
func (s portSet) pick() uint16 {
	i := rand.IntN(s.size())
	for _, r := range s {
		n := int(r.hi-r.lo) + 1
		if i < n {
			return r.lo + uint16(i)
		}
		i -= n
	}
	panic("hysteria2: empty port set")
}
