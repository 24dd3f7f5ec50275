package tun

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestPFStrictRules(t *testing.T) {
	head := []string{
		"# Skiff strict route for utun7: DNS only through the tunnel.",
		"pass out quick on lo0 proto { udp tcp } to any port 53",
		"pass out quick on utun7 proto { udp tcp } to any port 53",
		"pass out quick proto { udp tcp } to any port 53 user 0",
	}
	tests := []struct {
		name string
		cfg  func() Config
		want []string // the lines after head
	}{
		{
			name: "both families in the tunnel",
			cfg:  strictConfig(nil),
			want: []string{
				"pass out quick route-to (utun7 172.19.0.1) inet proto { udp tcp } to any port 53",
				"pass out quick route-to (utun7 fdfe:dcba:9876::1) inet6 proto { udp tcp } to any port 53",
			},
		},
		{
			name: "no IPv6 on the device",
			cfg:  strictConfig(func(c *Config) { c.Addr6 = netip.Prefix{} }),
			want: []string{
				"pass out quick route-to (utun7 172.19.0.1) inet proto { udp tcp } to any port 53",
				"block return out quick inet6 proto { udp tcp } to any port 53",
				"# No IPv6 in the tunnel: IPv6 only to the excluded ranges.",
				"pass out quick inet6 to { 2001:db8::7/128 ::1/128 fc00::/7 fe80::/10 ff00::/8 }",
				"block return out quick on ! lo0 inet6 all",
			},
		},
		{
			name: "no IPv6, LAN through the tunnel",
			cfg:  strictConfig(func(c *Config) { c.Addr6 = netip.Prefix{}; c.ExcludePrivate = false }),
			want: []string{
				"pass out quick route-to (utun7 172.19.0.1) inet proto { udp tcp } to any port 53",
				"block return out quick inet6 proto { udp tcp } to any port 53",
				"# No IPv6 in the tunnel: IPv6 only to the excluded ranges.",
				"pass out quick inet6 to { 2001:db8::7/128 ::1/128 fe80::/10 ff00::/8 }",
				"block return out quick on ! lo0 inet6 all",
			},
		},
		{
			name: "IPv6 only",
			cfg:  strictConfig(func(c *Config) { c.Addr4 = netip.Prefix{} }),
			want: []string{
				"block return out quick inet proto { udp tcp } to any port 53",
				"pass out quick route-to (utun7 fdfe:dcba:9876::1) inet6 proto { udp tcp } to any port 53",
				"# No IPv4 in the tunnel: IPv4 only to the excluded ranges.",
				"pass out quick inet to { 203.0.113.7/32 127.0.0.0/8 10.0.0.0/8 100.64.0.0/10 169.254.0.0/16 172.16.0.0/12 192.168.0.0/16 224.0.0.0/4 255.255.255.255/32 }",
				"block return out quick on ! lo0 inet all",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg()
			got, err := pfStrictRules(&cfg, "utun7", 0)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Join(append(append([]string{}, head...), tt.want...), "\n") + "\n"
			if got != want {
				t.Errorf("pfStrictRules:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestPFStrictRulesOrder checks what pf's "quick" makes of the order: the
// first matching rule wins, so the passes that keep DNS where it is must
// come before the route-to that takes the rest, and DNS must be refused
// before a family's excluded ranges are let through.
func TestPFStrictRulesOrder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr6 = netip.Prefix{}
	cfg.fill()
	rules, err := pfStrictRules(&cfg, "utun3", 501)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) int {
		i := strings.Index(rules, s)
		if i < 0 {
			t.Fatalf("no %q in\n%s", s, rules)
		}
		return i
	}
	routeTo := at("route-to")
	for _, before := range []string{"on lo0 proto", "on utun3 proto", "user 501"} {
		if at(before) > routeTo {
			t.Errorf("%q comes after the route-to rule", before)
		}
	}
	if at("block return out quick inet6 proto") > at("pass out quick inet6 to") {
		t.Error("IPv6 DNS is refused after the excluded ranges pass")
	}
	for _, l := range strings.Split(strings.TrimSpace(rules), "\n") {
		if !strings.HasPrefix(l, "#") && !strings.Contains(l, " quick ") {
			t.Errorf("rule without quick (a later rule would decide): %s", l)
		}
	}
}

func TestPFMainEvaluates(t *testing.T) {
	// As `pfctl -s rules` prints the default /etc/pf.conf of macOS.
	apple := `scrub-anchor "com.apple/*" all fragment reassemble
anchor "com.apple/*" all
`
	tests := []struct {
		name   string
		rules  string
		anchor string
		want   bool
	}{
		{"default pf.conf", apple, pfAnchor, true},
		{"empty main ruleset", "", pfAnchor, false},
		{"only the scrub anchor", `scrub-anchor "com.apple/*" all fragment reassemble`, pfAnchor, false},
		{"the anchor itself", `anchor "com.apple/250.SkiffStrict" all`, pfAnchor, true},
		{"another wildcard", `anchor "org.example/*" all`, pfAnchor, false},
		{"deeper anchor, wildcard over the top", apple, "com.apple/x/y", false},
		{"deeper anchor, its parent's wildcard", `anchor "com.apple/x/*" all`, "com.apple/x/y", true},
	}
	for _, tt := range tests {
		if got := pfMainEvaluates(tt.rules, tt.anchor); got != tt.want {
			t.Errorf("%s: pfMainEvaluates = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParsePFToken(t *testing.T) {
	tests := []struct {
		out  string
		want string // "" for an error
	}{
		{"No ALTQ support in kernel\nALTQ related functions disabled\npf enabled\nToken : 14243695716384788651\n", "14243695716384788651"},
		{"pf enabled\nToken: 42", "42"},
		{"pf enabled\n", ""},
		{"Token : 99999999999999999999999\n", ""}, // not a 64-bit number
		{"Token : -1\n", ""},
	}
	for _, tt := range tests {
		got, err := parsePFToken(tt.out)
		if tt.want == "" {
			if err == nil {
				t.Errorf("parsePFToken(%q) = %q, want an error", tt.out, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parsePFToken(%q) = %q, %v; want %q", tt.out, got, err, tt.want)
		}
	}
}

func TestPFReleaseGone(t *testing.T) {
	tests := []struct {
		err  string
		want bool
	}{
		{"pfctl -X 42: exit status 1: pfctl: DIOCSTOPREF: Invalid argument", true},
		{"pfctl -X 42: exit status 1: pfctl: DIOCSTOPREF: No such file or directory", true},
		{"pfctl -X 42: exit status 1: pfctl: /dev/pf: Permission denied", false},
		{"pfctl -a com.apple/250.SkiffStrict -F all: exit status 1: pfctl: Invalid argument", false},
	}
	for _, tt := range tests {
		if got := pfReleaseGone(errors.New(tt.err)); got != tt.want {
			t.Errorf("pfReleaseGone(%q) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
