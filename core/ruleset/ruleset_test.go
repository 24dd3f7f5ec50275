package ruleset

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

func nameFlow(name string, port uint16) *flow.Metadata {
	return &flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: name, Port: port}}
}

func ipFlow(ip string, port uint16, network string) *flow.Metadata {
	return &flow.Metadata{Network: network, Destination: flow.Addr{IP: netip.MustParseAddr(ip), Port: port}}
}

type matchCase struct {
	m    *flow.Metadata
	want bool
}

func checkMatches(t *testing.T, s *Set, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		if got := s.Match(c.m); got != c.want {
			t.Errorf("Match(%s %v host %q) = %v, want %v", c.m.Network, c.m.Destination, c.m.Host, got, c.want)
		}
	}
}

func TestSingBox(t *testing.T) {
	src := `{"version": 3, "rules": [
		{"domain": ["exact.example"], "domain_suffix": ["cn", ".below.example"], "domain_keyword": "taobao", "domain_regex": ["^ads[0-9]+\\."]},
		{"ip_cidr": ["10.1.0.0/16", "2001:db8::/32", "192.0.2.7"]},
		{"ip_cidr": "198.51.100.0/24", "port": [443], "network": "tcp"},
		{"port_range": ["8000:8100"], "network": ["udp"]},
		{"type": "logical", "mode": "and", "rules": [{"domain_suffix": "and.example"}, {"port": 22, "invert": true}]},
		{"process_name": ["curl"], "domain": "never.example"},
		{"domain_suffix": "unknown.example", "some_future_field": 1}
	]}`
	s, err := ParseSingBox([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, s, []matchCase{
		{nameFlow("exact.example", 80), true},
		{nameFlow("EXACT.example.", 80), true},
		{nameFlow("a.exact.example", 80), false},
		{nameFlow("cn", 80), true},
		{nameFlow("www.baidu.cn", 80), true},
		{nameFlow("cnn.com", 80), false},
		{nameFlow("below.example", 80), false},
		{nameFlow("x.below.example", 80), true},
		{nameFlow("item.taobao.com", 80), true},
		{nameFlow("ads12.example.org", 80), true},
		{nameFlow("ads.example.org", 80), false},
		{ipFlow("10.1.255.255", 80, flow.TCP), true},
		{ipFlow("10.2.0.0", 80, flow.TCP), false},
		{ipFlow("::ffff:10.1.2.3", 80, flow.TCP), true},
		{ipFlow("2001:db8:ffff::1", 80, flow.UDP), true},
		{ipFlow("192.0.2.7", 80, flow.TCP), true},
		{ipFlow("192.0.2.8", 80, flow.TCP), false},
		{ipFlow("198.51.100.9", 443, flow.TCP), true},
		{ipFlow("198.51.100.9", 443, flow.UDP), false},
		{ipFlow("198.51.100.9", 80, flow.TCP), false},
		{ipFlow("203.0.113.1", 8050, flow.UDP), true},
		{ipFlow("203.0.113.1", 8050, flow.TCP), false},
		{nameFlow("x.and.example", 80), true},
		{nameFlow("x.and.example", 22), false},
		{nameFlow("never.example", 80), false}, // its rule was skipped
		{nameFlow("unknown.example", 80), false},
		{&flow.Metadata{Network: flow.TCP, Host: "www.sohu.cn", Destination: flow.Addr{IP: netip.MustParseAddr("203.0.113.9"), Port: 443}}, true},
	})
	sk := s.Skipped()
	if len(sk) != 2 || sk[0].Entry != "rule 6" || !strings.Contains(sk[0].Reason, "process") || sk[1].Entry != "rule 7" || !strings.Contains(sk[1].Reason, "some_future_field") {
		t.Errorf("Skipped = %+v; want rule 6 (process) and rule 7 (an unknown field), with reasons", sk)
	}
}

func TestSingBoxErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"not JSON", `{"version": 1, "rules": [`, "unexpected end"},
		{"version", `{"version": 4, "rules": []}`, "version 4"},
		{"no version", `{"rules": []}`, "version 0"},
		{"binary", "SRS\x01\x78\x9c", "srs"},
		{"bad prefix", `{"version": 1, "rules": [{"ip_cidr": ["10.0.0.0/33"]}]}`, "ip_cidr"},
		{"names the rule", `{"version": 1, "rules": [{"port": 1}, {"port_range": ["9:1"]}]}`, "ruleset: sing-box: rule 2: "},
		{"bad domain", `{"version": 1, "rules": [{"domain": ["a..b"]}]}`, "not a domain"},
		{"bad regex", `{"version": 1, "rules": [{"domain_regex": ["("]}]}`, "regex"},
		{"bad range", `{"version": 1, "rules": [{"port_range": ["9:1"]}]}`, "port range"},
		{"empty rule", `{"version": 1, "rules": [{}]}`, "no condition"},
		{"bad mode", `{"version": 1, "rules": [{"type": "logical", "mode": "xor", "rules": [{"port": 1}]}]}`, "xor"},
		{"deep", `{"version": 1, "rules": [` + strings.Repeat(`{"type":"logical","mode":"and","rules":[`, 10) + `{"port":1}` + strings.Repeat(`]}`, 10) + `]}`, "nested"},
		{"too big", `{"version": 1, "rules": []}` + strings.Repeat(" ", MaxSize), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSingBox([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one that mentions %q", err, tc.want)
			}
		})
	}
}

func TestClashDomain(t *testing.T) {
	for _, form := range []string{
		"payload:\n  - 'exact.example'\n  - '+.suffix.example'\n  - '.below.example'\n  - \"*.one.example\"\n  - 'bad..name'\n  - 'a*b.example'\n",
		"# a comment\nexact.example\n+.suffix.example\n.below.example\n*.one.example\nbad..name\na*b.example\n",
	} {
		s, err := ParseClash(BehaviorDomain, []byte(form))
		if err != nil {
			t.Fatal(err)
		}
		checkMatches(t, s, []matchCase{
			{nameFlow("exact.example", 1), true},
			{nameFlow("x.exact.example", 1), false},
			{nameFlow("suffix.example", 1), true},
			{nameFlow("a.b.suffix.example", 1), true},
			{nameFlow("below.example", 1), false},
			{nameFlow("a.b.below.example", 1), true},
			{nameFlow("one.example", 1), false},
			{nameFlow("a.one.example", 1), true},
			{nameFlow("a.b.one.example", 1), false},
			{nameFlow("other.example", 1), false},
		})
		if sk := s.Skipped(); len(sk) != 2 {
			t.Errorf("Skipped = %+v, want the two bad entries", sk)
		}
	}
}

func TestClashIPCIDRAndClassical(t *testing.T) {
	s, err := ParseClash(BehaviorIPCIDR, []byte("payload:\n  - 10.0.0.0/8\n  - 2001:db8::/32\n  - 192.0.2.1\n  - nonsense\n"))
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, s, []matchCase{
		{ipFlow("10.9.9.9", 1, flow.TCP), true},
		{ipFlow("11.0.0.0", 1, flow.TCP), false},
		{ipFlow("2001:db8::9", 1, flow.TCP), true},
		{ipFlow("192.0.2.1", 1, flow.TCP), true},
		{nameFlow("10.0.0.1.example", 1), false},
	})
	if len(s.Skipped()) != 1 {
		t.Errorf("Skipped = %+v", s.Skipped())
	}

	s, err = ParseClash(BehaviorClassical, []byte(`payload:
  - DOMAIN,exact.example
  - DOMAIN-SUFFIX,suffix.example
  - DOMAIN-KEYWORD,Google
  - DOMAIN-REGEX,^x[0-9]\.example$
  - IP-CIDR,10.0.0.0/8,no-resolve
  - IP-CIDR6,2001:db8::/32
  - DST-PORT,25/465-587
  - NETWORK,udp
  - PROCESS-NAME,curl
  - GEOIP,CN
  - AND,((DOMAIN,a.example),(NETWORK,udp))
  - DOMAIN,b.example,unknown-option
`))
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, s, []matchCase{
		{nameFlow("exact.example", 80), true},
		{nameFlow("a.suffix.example", 80), true},
		{nameFlow("www.google.com", 80), true},
		{nameFlow("x7.example", 80), true},
		{ipFlow("10.0.0.1", 80, flow.TCP), true},
		{ipFlow("2001:db8::1", 80, flow.TCP), true},
		{ipFlow("203.0.113.1", 25, flow.TCP), true},
		{ipFlow("203.0.113.1", 500, flow.TCP), true},
		{ipFlow("203.0.113.1", 443, flow.TCP), false},
		{ipFlow("203.0.113.1", 443, flow.UDP), true},
		{nameFlow("a.example", 80), false},
		{nameFlow("b.example", 80), false},
	})
	reasons := map[string]string{}
	for _, k := range s.Skipped() {
		reasons[k.Entry] = k.Reason
	}
	for _, e := range []string{"PROCESS-NAME,curl", "GEOIP,CN", "AND,((DOMAIN,a.example),(NETWORK,udp))", "DOMAIN,b.example,unknown-option"} {
		if reasons[e] == "" {
			t.Errorf("%q not listed as skipped with a reason: %v", e, reasons)
		}
	}
}

func TestClashErrors(t *testing.T) {
	for _, tc := range []struct{ behavior, src, want string }{
		{"nonsense", "a.example\n", "behavior"},
		{BehaviorDomain, "payload:\n  - [unclosed\n", "yaml"},
		{BehaviorDomain, "\x28\xb5\x2f\xfdmrs", "mrs"},
		{BehaviorDomain, strings.Repeat("a", MaxSize+1), "more than"},
		// A YAML bomb: aliases that expand to billions of entries.
		{BehaviorDomain, "a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\npayload: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n", "clash:"},
	} {
		_, err := ParseClash(tc.behavior, []byte(tc.src))
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
			t.Errorf("ParseClash(%s, %.30q…) err = %v, want one that mentions %q", tc.behavior, tc.src, err, tc.want)
		}
	}
}

// TestIPRangesAgainstPrefixes checks the merged ranges against a plain walk
// over the prefixes, for random prefixes and addresses around their edges.
func TestIPRangesAgainstPrefixes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var ps []netip.Prefix
		for range 1 + r.IntN(40) {
			if r.IntN(2) == 0 {
				a := netip.AddrFrom4([4]byte{byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
				ps = append(ps, netip.PrefixFrom(a, r.IntN(33)).Masked())
			} else {
				var b [16]byte
				b[0], b[1], b[15] = 0x20, byte(r.IntN(4)), byte(r.IntN(256))
				ps = append(ps, netip.PrefixFrom(netip.AddrFrom16(b), r.IntN(129)).Masked())
			}
		}
		ranges := newIPRanges(ps)
		var probes []netip.Addr
		for _, p := range ps {
			probes = append(probes, p.Addr(), p.Addr().Prev(), lastOf(p), lastOf(p).Next())
		}
		for _, a := range probes {
			if !a.IsValid() {
				continue
			}
			want := false
			for _, p := range ps {
				want = want || p.Contains(a)
			}
			if got := ranges.contains(a); got != want {
				t.Fatalf("round %d: contains(%v) = %v, want %v; prefixes %v", round, a, got, want, ps)
			}
		}
	}
	full := newIPRanges([]netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")})
	for _, a := range []string{"0.0.0.0", "255.255.255.255", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"} {
		if !full.contains(netip.MustParseAddr(a)) {
			t.Errorf("/0 does not contain %s", a)
		}
	}
}

// bigLists returns n domains and m IPv4 prefixes shaped like the public
// "direct for China" lists (random second-level names under a few TLDs).
func bigLists(n, m int) (domains []string, prefixes []string) {
	r := rand.New(rand.NewPCG(7, 7))
	tlds := []string{"cn", "com", "net", "com.cn", "org"}
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	for range n {
		l := 5 + r.IntN(10)
		b := make([]byte, l)
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		domains = append(domains, string(b)+"."+tlds[r.IntN(len(tlds))])
	}
	for range m {
		prefixes = append(prefixes, fmt.Sprintf("%d.%d.%d.0/%d", 1+r.IntN(222), r.IntN(256), r.IntN(256), 16+r.IntN(9)))
	}
	return domains, prefixes
}

func bigSet(tb testing.TB) (*Set, []string) {
	domains, prefixes := bigLists(100_000, 10_000)
	var b bytes.Buffer
	b.WriteString("payload:\n")
	for _, d := range domains {
		b.WriteString("  - '+." + d + "'\n")
	}
	s, err := ParseClash(BehaviorDomain, b.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	// Fold the prefixes in as a second rule of the same set.
	var sp spec
	for _, p := range prefixes {
		pp, _ := parsePrefix(p)
		sp.ips = append(sp.ips, pp)
	}
	all := spec{suffix: domains, ips: sp.ips}
	s, err = build([]spec{all}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s, domains
}

func TestBigSetDoesNotAllocate(t *testing.T) {
	s, domains := bigSet(t)
	st := s.Stats()
	if st.Domains != 100_000 {
		t.Errorf("Stats = %+v", st)
	}
	t.Logf("100k suffixes and 10k prefixes: %+v", st)
	hit := nameFlow("www.a.b."+domains[500], 443)
	miss := nameFlow("www.not-in-the-list.example", 443)
	addr := ipFlow("8.8.8.8", 443, flow.TCP)
	if !s.Match(hit) || s.Match(miss) {
		t.Fatal("the list does not match as built")
	}
	if n := testing.AllocsPerRun(1000, func() { s.Match(hit); s.Match(miss); s.Match(addr) }); n != 0 {
		t.Errorf("Match allocates %.1f times per flow", n)
	}
}

func BenchmarkMatch(b *testing.B) {
	s, domains := bigSet(b)
	flows := []*flow.Metadata{
		nameFlow("www."+domains[1234], 443),
		nameFlow("static.cdn.not-listed.example", 443),
		ipFlow("114.114.114.114", 53, flow.UDP),
		ipFlow("2001:db8::1", 443, flow.TCP),
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Match(flows[i%len(flows)])
	}
}

func BenchmarkParseClash100k(b *testing.B) {
	domains, _ := bigLists(100_000, 0)
	var buf bytes.Buffer
	for _, d := range domains {
		buf.WriteString("+." + d + "\n")
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for range b.N {
		if _, err := ParseClash(BehaviorDomain, buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParseSingBox(f *testing.F) {
	f.Add([]byte(`{"version": 2, "rules": [{"domain_suffix": ["cn", ".a.b"], "ip_cidr": "10.0.0.0/8", "port": 443}]}`))
	f.Add([]byte(`{"version": 3, "rules": [{"type": "logical", "mode": "or", "rules": [{"network": "udp"}, {"domain_keyword": "x"}], "invert": true}]}`))
	f.Add([]byte(`{"version": 1, "rules": [{"port_range": [":80", "1000:"], "domain_regex": "^a"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSingBox(b)
		if err != nil {
			return
		}
		fuzzMatch(s)
	})
}

func FuzzParseClash(f *testing.F) {
	f.Add(uint8(0), []byte("payload:\n  - '+.a.cn'\n  - '*.b.cn'\n"))
	f.Add(uint8(1), []byte("10.0.0.0/8\n2001:db8::/32\n# c\n"))
	f.Add(uint8(2), []byte("DOMAIN-SUFFIX,a.cn\nDST-PORT,80/1000-2000\nIP-CIDR,1.2.3.0/24,no-resolve\nGEOIP,CN\n"))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		behavior := []string{BehaviorDomain, BehaviorIPCIDR, BehaviorClassical}[which%3]
		s, err := ParseClash(behavior, b)
		if err != nil {
			return
		}
		fuzzMatch(s)
	})
}

// fuzzMatch runs a decoded set against a few flows: it must not panic.
func fuzzMatch(s *Set) {
	for _, m := range []*flow.Metadata{
		nameFlow("a.cn", 80), nameFlow("x.b.cn", 1000), ipFlow("10.1.1.1", 443, flow.UDP), ipFlow("2001:db8::1", 80, flow.TCP),
	} {
		s.Match(m)
	}
	s.Stats()
}
