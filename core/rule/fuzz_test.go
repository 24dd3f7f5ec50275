package rule

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

// parseSpec builds a rule list from a compact text, one rule per line,
// each condition "kind=value" separated by spaces, the last word the
// target: d domain, s suffix, k keyword, c prefix (parsePrefix), p ports
// (ParsePorts), n network, P private. Conditions that do not parse are
// skipped, so that most inputs give rules.
func parseSpec(spec string) []Rule {
	var rules []Rule
	for _, line := range strings.Split(spec, "\n") {
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		r := Rule{Target: words[len(words)-1]}
		for _, w := range words[:len(words)-1] {
			kind, v, _ := strings.Cut(w, "=")
			switch kind {
			case "d":
				r.Domain = append(r.Domain, v)
			case "s":
				r.DomainSuffix = append(r.DomainSuffix, v)
			case "k":
				r.DomainKeyword = append(r.DomainKeyword, v)
			case "c":
				if p, err := parsePrefix(v); err == nil {
					r.IPCIDR = append(r.IPCIDR, p)
				}
			case "p":
				if ps, err := ParsePorts(v); err == nil {
					r.Ports = append(r.Ports, ps...)
				}
			case "n":
				r.Network = v
			case "P":
				r.Private = true
			}
		}
		rules = append(rules, r)
	}
	return rules
}

// FuzzMatch compiles arbitrary rule lists and matches an arbitrary flow.
// Compile must not panic, and the indexed Match must pick what walking the
// rules in order picks: the first rule that matches, else the final
// target.
func FuzzMatch(f *testing.F) {
	f.Add("s=example.com proxy\nd=exact.test direct\nk=ads block\nc=10.0.0.0/8 direct\np=443,8000-9000 n=tcp proxy", "www.example.com", "", uint16(443), true)
	f.Add("s=.example.com a\ns=example.com b", "example.com", "", uint16(80), false)
	f.Add("c=192.0.2.1 a\nP b\np=53 n=udp c", "", "192.168.1.1", uint16(53), false)
	f.Add("d=EXAMPLE.com. a\nk=AMP b", "Example.COM.", "", uint16(1), true)
	f.Add("c=::ffff:10.0.0.1/128 a\nc=fe80::/10 b", "", "::ffff:10.0.0.1", uint16(22), true)
	f.Add("s=.. a\nd= b", "x", "1.2.3.4", uint16(0), false)
	f.Fuzz(func(t *testing.T, spec, name, ip string, port uint16, tcp bool) {
		s, err := Compile(parseSpec(spec), "final")
		if err != nil {
			return
		}
		m := &flow.Metadata{Network: flow.UDP, Destination: flow.Addr{Name: name, Port: port}}
		if tcp {
			m.Network = flow.TCP
		}
		if a, err := netip.ParseAddr(ip); err == nil {
			m.Destination = flow.Addr{IP: a, Port: port}
			m.Host = name // sniffed
		}
		want := s.final
		n := strings.ToLower(strings.TrimSuffix(name, "."))
		for i := range s.rules {
			if s.rules[i].match(m, n) {
				want = s.rules[i].Target
				break
			}
		}
		if got := s.Match(m); got != want {
			t.Fatalf("Match = %q; the first matching rule says %q", got, want)
		}
	})
}
