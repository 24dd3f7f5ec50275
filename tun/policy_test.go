package tun

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestPlanLinux(t *testing.T) {
	server := netip.MustParsePrefix("203.0.113.7/32")
	base := func() Config {
		c := DefaultConfig()
		c.ExcludeServers = []netip.Prefix{server, netip.MustParsePrefix("2001:db8::7/128")}
		c.fill()
		return c
	}
	tests := []struct {
		name      string
		cfg       func() Config
		want      []string // rules that must be there
		wantNot   []string // substrings no rule may contain
		routes    int
		ruleCount int
	}{
		{
			name: "strict default",
			cfg:  base,
			want: []string{
				"-4 5300: fwmark 0x534b lookup 254",
				"-4 5301: fwmark 0x534b unreachable",
				"-4 5302: ipproto 17 dport 53 lookup 5348",
				"-4 5302: ipproto 6 dport 53 lookup 5348",
				"-4 5303: to 203.0.113.7/32 lookup 254",
				"-4 5303: to 127.0.0.0/8 lookup 254",
				"-4 5303: to 192.168.0.0/16 lookup 254",
				"-4 5304: lookup 254 suppress_prefixlength 0",
				"-4 5305: lookup 5348",
				"-4 5306: prohibit",
				"-6 5303: to 2001:db8::7/128 lookup 254",
				"-6 5303: to fe80::/10 lookup 254",
				"-6 5305: lookup 5348",
				"-6 5306: prohibit",
			},
			wantNot: []string{"not"},
			routes:  2,
		},
		{
			name: "not strict, LAN through the tunnel",
			cfg: func() Config {
				c := base()
				c.StrictRoute = false
				c.ExcludePrivate = false
				return c
			},
			want:    []string{"-4 5304: lookup 254 suppress_prefixlength 0", "-4 5305: lookup 5348"},
			wantNot: []string{"192.168.0.0/16", "prohibit", "dport 53"},
			routes:  2,
		},
		{
			name: "no IPv6 address, strict: IPv6 only excluded and prohibited",
			cfg: func() Config {
				c := base()
				c.Addr6 = netip.Prefix{}
				return c
			},
			want:    []string{"-6 5306: prohibit", "-6 5303: to ::1/128 lookup 254"},
			wantNot: []string{"-6 5305", "-6 5302"},
			routes:  1,
		},
		{
			name: "no IPv6 address, not strict: IPv6 untouched",
			cfg: func() Config {
				c := base()
				c.Addr6 = netip.Prefix{}
				c.StrictRoute = false
				return c
			},
			wantNot: []string{"-6 "},
			routes:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg()
			routes, rules := policyLinux(&cfg, "skiff0")
			var got []string
			for _, r := range rules {
				got = append(got, r.String())
				// What is recorded passes the state file's check.
				if err := (Change{Kind: "rule", Rule: &r}).check(); err != nil {
					t.Errorf("rule %s: %v", r, err)
				}
			}
			for _, r := range routes {
				if err := (Change{Kind: "route", Route: &r}).check(); err != nil {
					t.Errorf("route %s: %v", r, err)
				}
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("missing rule %q in\n%s", w, strings.Join(got, "\n"))
				}
			}
			for _, w := range tt.wantNot {
				for _, g := range got {
					if strings.Contains(g, w) {
						t.Errorf("rule %q should not contain %q", g, w)
					}
				}
			}
			if len(routes) != tt.routes {
				t.Errorf("got %d routes %v, want %d", len(routes), routes, tt.routes)
			}
			for _, r := range routes {
				if r.Table != DefaultTable || r.Dev != "skiff0" || r.Dst.Bits() != 0 {
					t.Errorf("route %s: want a default route into skiff0 in table %d", r, DefaultTable)
				}
			}
			// Rules must come in priority order, marked sockets first.
			for i := 1; i < len(rules); i++ {
				if rules[i].Family == rules[i-1].Family && rules[i].Priority < rules[i-1].Priority {
					t.Errorf("rule %s after %s", rules[i], rules[i-1])
				}
			}
		})
	}
}

func TestExclusionsKeepDeviceSubnet(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr4 = netip.MustParsePrefix("10.1.2.1/30")
	for _, p := range exclusions(&cfg, 4) {
		if p.Contains(cfg.Addr4.Addr()) && p.Bits() >= cfg.Addr4.Bits() {
			t.Errorf("exclusion %s swallows the device's own subnet", p)
		}
	}
	// 10.0.0.0/8 is wider than the device's /30: the /30 (more specific, in
	// main via the device) still wins, so the exclusion stays.
	if !slices.Contains(exclusions(&cfg, 4), netip.MustParsePrefix("10.0.0.0/8")) {
		t.Error("10.0.0.0/8 dropped")
	}
	cfg.ExcludeServers = []netip.Prefix{netip.MustParsePrefix("::ffff:203.0.113.9/128")}
	if !slices.Contains(exclusions(&cfg, 4), netip.MustParsePrefix("203.0.113.9/32")) {
		t.Error("an IPv4-mapped server address is not excluded as IPv4")
	}
}
