package rule

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/process"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/internal/nettest"
)

func meta(network, dst, host string) *flow.Metadata {
	a, err := flow.ParseAddr(dst)
	if err != nil {
		panic(err)
	}
	return &flow.Metadata{Network: network, Destination: a, Host: host}
}

func TestMatch(t *testing.T) {
	rules := []Rule{
		{Private: true, Target: "direct"},
		{Domain: []string{"Exact.Example.COM."}, Target: "exact"},
		{DomainSuffix: []string{"ads.example"}, Target: "block"},
		{DomainSuffix: []string{".below.org"}, Target: "below"},
		{DomainKeyword: []string{"tracker"}, Network: "tcp", Target: "kw"},
		{IPCIDR: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")}, Target: "cidr"},
		{Ports: []PortRange{{From: 6881, To: 6889}}, Network: "udp", Target: "p2p"},
		{DomainSuffix: []string{"example.com"}, Target: "late"},
	}
	s, err := Compile(rules, "proxy")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		m    *flow.Metadata
		want string
	}{
		{"lan ipv4", meta("tcp", "192.168.1.10:80", ""), "direct"},
		{"loopback v6", meta("tcp", "[::1]:80", ""), "direct"},
		{"fake-ip range is not private", meta("tcp", "198.18.0.5:443", ""), "proxy"},
		{"exact, case and dot folded", meta("tcp", "exact.example.com:443", ""), "exact"},
		{"exact wins over a later suffix", meta("tcp", "EXACT.example.com.:443", ""), "exact"},
		{"later suffix", meta("tcp", "www.example.com:443", ""), "late"},
		{"suffix matches itself", meta("tcp", "ads.example:443", ""), "block"},
		{"suffix matches below", meta("udp", "x.y.ads.example:443", ""), "block"},
		{"suffix does not match a longer label", meta("tcp", "badads.example:443", ""), "proxy"},
		{"dot suffix skips itself", meta("tcp", "below.org:443", ""), "proxy"},
		{"dot suffix matches below", meta("tcp", "a.below.org:443", ""), "below"},
		{"keyword with network", meta("tcp", "mytracker.net:443", ""), "kw"},
		{"keyword wrong network", meta("udp", "mytracker.net:443", ""), "proxy"},
		{"sniffed host used for an IP", meta("tcp", "93.184.216.34:443", "www.example.com"), "late"},
		{"cidr v4", meta("tcp", "203.0.113.7:22", ""), "cidr"},
		{"cidr v6", meta("udp", "[2001:db8::1]:53", ""), "cidr"},
		{"port range and network", meta("udp", "8.8.8.8:6885", ""), "p2p"},
		{"port range wrong network", meta("tcp", "8.8.8.8:6885", ""), "proxy"},
		{"final", meta("tcp", "8.8.8.8:443", ""), "proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Match(tt.m); got != tt.want {
				t.Errorf("Match = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOrderAcrossIndex checks that a walked rule placed before an indexed
// domain rule still wins, and one placed after it does not.
func TestOrderAcrossIndex(t *testing.T) {
	s, err := Compile([]Rule{
		{Ports: []PortRange{{From: 443, To: 443}}, Target: "first"},
		{DomainSuffix: []string{"example.com"}, Target: "second"},
		{Network: "tcp", Target: "third"},
	}, "final")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Match(meta("tcp", "a.example.com:443", "")); got != "first" {
		t.Errorf("got %q, want first", got)
	}
	if got := s.Match(meta("tcp", "a.example.com:80", "")); got != "second" {
		t.Errorf("got %q, want second", got)
	}
	if got := s.Match(meta("tcp", "other.net:80", "")); got != "third" {
		t.Errorf("got %q, want third", got)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		rules []Rule
		final string
	}{
		{nil, ""},
		{[]Rule{{Domain: []string{"a"}}}, "f"},
		{[]Rule{{Domain: []string{"..."}, Target: "x"}}, "f"},
		{[]Rule{{Network: "icmp", Target: "x"}}, "f"},
		{[]Rule{{Ports: []PortRange{{From: 9, To: 1}}, Target: "x"}}, "f"},
	}
	for i, tt := range tests {
		if _, err := Compile(tt.rules, tt.final); err == nil {
			t.Errorf("case %d: want error", i)
		}
	}
}

func TestParsePorts(t *testing.T) {
	got, err := ParsePorts("80, 443,8000-9000")
	if err != nil {
		t.Fatal(err)
	}
	want := []PortRange{{From: 80, To: 80}, {From: 443, To: 443}, {From: 8000, To: 9000}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"", "0", "x", "9-1", "70000"} {
		if _, err := ParsePorts(bad); err == nil {
			t.Errorf("ParsePorts(%q): want error", bad)
		}
	}
}

func TestBuiltins(t *testing.T) {
	rules, final, ok := Builtin(BuiltinBypassList, "proxy", "direct", []string{"corp.example", "10.8.0.0/16", "192.0.2.1"})
	if !ok || final != "proxy" {
		t.Fatal("preset missing")
	}
	s, err := Compile(rules, final)
	if err != nil {
		t.Fatal(err)
	}
	for dst, want := range map[string]string{
		"git.corp.example:443": "direct",
		"192.0.2.1:80":         "direct",
		"10.0.0.1:80":          "direct", // private
		"1.1.1.1:443":          "proxy",
	} {
		if got := s.Match(meta("tcp", dst, "")); got != want {
			t.Errorf("%s: got %q, want %q", dst, got, want)
		}
	}
	if _, _, ok := Builtin("nope", "p", "d", nil); ok {
		t.Error("unknown preset reported as found")
	}
}

// BenchmarkMatch measures a match against 10,000 suffix rules (as an ad
// list would give) plus a few walked rules, for a name that hits none.
func BenchmarkMatch(b *testing.B) {
	rules := []Rule{{Private: true, Target: "direct"}}
	for i := range 10000 {
		rules = append(rules, Rule{DomainSuffix: []string{fmt.Sprintf("ads%d.example", i)}, Target: "block"})
	}
	rules = append(rules, Rule{Ports: []PortRange{{From: 25, To: 25}}, Target: "block"})
	s, err := Compile(rules, "proxy")
	if err != nil {
		b.Fatal(err)
	}
	m := meta("tcp", "static.cdn.some-site.example.org:443", "")
	b.ReportAllocs()
	for b.Loop() {
		if s.Match(m) != "proxy" {
			b.Fatal("wrong target")
		}
	}
}

// FuzzParsePorts: whatever ParsePorts accepts is a list of proper ranges.
func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"80", "80,443", "8000-9000", " 1 - 2 ", "0", "9-1", "65535", "-", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePorts(s)
		if err != nil {
			return
		}
		if len(ps) == 0 {
			t.Fatalf("ParsePorts(%q) accepted nothing", s)
		}
		for _, p := range ps {
			if p.From == 0 || p.From > p.To {
				t.Fatalf("ParsePorts(%q) gave range %d-%d", s, p.From, p.To)
			}
		}
		if _, err := Compile([]Rule{{Ports: ps, Target: "x"}}, "y"); err != nil {
			t.Fatalf("ParsePorts(%q) gave ports Compile refuses: %v", s, err)
		}
	})
}

func TestCompileSets(t *testing.T) {
	cn, err := ruleset.ParseClash(ruleset.BehaviorDomain, []byte("+.cn\n+.baidu.com\n"))
	if err != nil {
		t.Fatal(err)
	}
	cnIP, err := ruleset.ParseClash(ruleset.BehaviorIPCIDR, []byte("114.114.0.0/16\n"))
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]*ruleset.Set{"cn": cn, "cn-ip": cnIP}
	s, err := CompileWith([]Rule{
		{DomainSuffix: []string{"proxied.baidu.com"}, Target: "proxy"},
		{RuleSet: []string{"cn", "cn-ip"}, Target: "direct"},
		{Domain: []string{"www.example.cn"}, Target: "block"}, // after the set: never reached for .cn
	}, "proxy", Env{Sets: sets})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    flow.Metadata
		want string
	}{
		{flow.Metadata{Destination: flow.Addr{Name: "www.baidu.com", Port: 443}}, "direct"},
		{flow.Metadata{Destination: flow.Addr{Name: "a.proxied.baidu.com", Port: 443}}, "proxy"},
		{flow.Metadata{Destination: flow.Addr{Name: "www.example.cn", Port: 443}}, "direct"},
		{flow.Metadata{Destination: flow.Addr{IP: netip.MustParseAddr("114.114.114.114"), Port: 53}}, "direct"},
		{flow.Metadata{Destination: flow.Addr{Name: "example.com", Port: 443}}, "proxy"},
	} {
		if got := s.Match(&tc.m); got != tc.want {
			t.Errorf("Match(%v) = %q, want %q", tc.m.Destination, got, tc.want)
		}
	}
	if _, err := CompileWith([]Rule{{RuleSet: []string{"geosite-cn"}, Target: "direct"}}, "proxy", Env{Sets: sets}); err == nil || !strings.Contains(err.Error(), `"geosite-cn" is not loaded`) {
		t.Errorf("an unknown rule set: err = %v", err)
	}
}

// TestProcessRule routes a flow from a socket of this test's by the
// program's name, then by its path; other programs' rules do not match.
func TestProcessRule(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("programs are looked up on Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := nettest.Dial(t).LocalAddr().(*net.TCPAddr).AddrPort()
	env := Env{Processes: process.New()}
	for _, tc := range []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{{Process: []string{"curl"}, Target: "a"}, {Process: []string{filepath.Base(exe)}, Target: "direct"}}, "direct"},
		{[]Rule{{Process: []string{exe}, Ports: []PortRange{{From: 1, To: 65535}}, Target: "direct"}}, "direct"},
		{[]Rule{{Process: []string{"/usr/bin/" + filepath.Base(exe)}, Target: "direct"}}, "proxy"},
		{[]Rule{{Process: []string{"firefox"}, Target: "direct"}}, "proxy"},
	} {
		s, err := CompileWith(tc.rules, "proxy", env)
		if err != nil {
			t.Fatal(err)
		}
		m := &flow.Metadata{Network: flow.TCP, Source: src, Destination: flow.Addr{Name: "example.com", Port: 443}}
		if got := s.Match(m); got != tc.want {
			t.Errorf("rules %+v: %q, want %q (process %q)", tc.rules, got, tc.want, m.Process)
		}
		if m.Process != exe {
			t.Errorf("the flow's process is %q, want %q", m.Process, exe)
		}
	}
	// A flow from no socket of this machine's: no program, no match, and
	// the look-up is not repeated for that flow.
	s, _ := CompileWith([]Rule{{Process: []string{filepath.Base(exe)}, Target: "direct"}}, "proxy", env)
	m := &flow.Metadata{Network: flow.TCP, Source: netip.MustParseAddrPort("192.0.2.1:1"), Destination: flow.Addr{Name: "example.com", Port: 443}}
	if got := s.Match(m); got != "proxy" || m.Process != flow.ProcessUnknown {
		t.Errorf("an unknown program: %q, process %q", got, m.Process)
	}
	if _, err := Compile([]Rule{{Process: []string{" "}, Target: "x"}}, "proxy"); err == nil {
		t.Error("an empty program name compiled")
	}
}
