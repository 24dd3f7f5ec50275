package tun

import (
	"net/netip"
	"slices"
	"testing"
)

// strictConfig returns a configuration for the strict route tests:
// DefaultConfig with a server of each family excluded, changed by edit.
func strictConfig(edit func(*Config)) func() Config {
	return func() Config {
		c := DefaultConfig()
		c.ExcludeServers = []netip.Prefix{netip.MustParsePrefix("203.0.113.7/32"), netip.MustParsePrefix("2001:db8::7/128")}
		if edit != nil {
			edit(&c)
		}
		c.fill()
		return c
	}
}

func TestPlanWFP(t *testing.T) {
	tests := []struct {
		name string
		cfg  func() Config
		want []string // every rule, in order
	}{
		{
			name: "both families in the tunnel",
			cfg:  strictConfig(nil),
			want: []string{
				"v4 w15 permit loopback",
				"v4 w14 permit app",
				"v4 w13 permit tunnel",
				"v4 w12 block proto 6,17 port 53",
				"v6 w15 permit loopback",
				"v6 w14 permit app",
				"v6 w13 permit tunnel",
				"v6 w12 block proto 6,17 port 53",
			},
		},
		{
			name: "no IPv6 on the device: IPv6 only to the excluded ranges",
			cfg:  strictConfig(func(c *Config) { c.Addr6 = netip.Prefix{} }),
			want: []string{
				"v4 w15 permit loopback",
				"v4 w14 permit app",
				"v4 w13 permit tunnel",
				"v4 w12 block proto 6,17 port 53",
				"v6 w15 permit loopback",
				"v6 w14 permit app",
				"v6 w12 block proto 6,17 port 53",
				"v6 w11 permit to 2001:db8::7/128,::1/128,fc00::/7,fe80::/10,ff00::/8",
				"v6 w10 block",
			},
		},
		{
			name: "no IPv6, LAN through the tunnel: link scope stays",
			cfg:  strictConfig(func(c *Config) { c.Addr6 = netip.Prefix{}; c.ExcludePrivate = false }),
			want: []string{
				"v4 w15 permit loopback",
				"v4 w14 permit app",
				"v4 w13 permit tunnel",
				"v4 w12 block proto 6,17 port 53",
				"v6 w15 permit loopback",
				"v6 w14 permit app",
				"v6 w12 block proto 6,17 port 53",
				"v6 w11 permit to 2001:db8::7/128,::1/128,fe80::/10,ff00::/8",
				"v6 w10 block",
			},
		},
		{
			name: "IPv6 only: IPv4 only to the excluded ranges",
			cfg:  strictConfig(func(c *Config) { c.Addr4 = netip.Prefix{} }),
			want: []string{
				"v4 w15 permit loopback",
				"v4 w14 permit app",
				"v4 w12 block proto 6,17 port 53",
				"v4 w11 permit to 203.0.113.7/32,127.0.0.0/8,10.0.0.0/8,100.64.0.0/10,169.254.0.0/16,172.16.0.0/12,192.168.0.0/16,224.0.0.0/4,255.255.255.255/32",
				"v4 w10 block",
				"v6 w15 permit loopback",
				"v6 w14 permit app",
				"v6 w13 permit tunnel",
				"v6 w12 block proto 6,17 port 53",
			},
		},
		{
			name: "not strict",
			cfg:  strictConfig(func(c *Config) { c.StrictRoute = false }),
		},
		{
			name: "no auto-route",
			cfg:  strictConfig(func(c *Config) { c.AutoRoute = false }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg()
			var got []string
			for _, r := range planWFP(&cfg) {
				got = append(got, r.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("planWFP:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestPlanWFPOrder checks what the weights must guarantee whatever the
// configuration: weights are unique per family, and the DNS block comes
// after every permit that could match DNS to another interface, except the
// loopback, Skiff's own and the tunnel's.
func TestPlanWFPOrder(t *testing.T) {
	for _, addr6 := range []netip.Prefix{DefaultAddr6, {}} {
		cfg := DefaultConfig()
		cfg.Addr6 = addr6
		cfg.fill()
		seen := map[[2]int]bool{}
		dns, excluded := map[bool]uint8{}, map[bool]uint8{}
		for _, r := range planWFP(&cfg) {
			k := [2]int{boolInt(r.V6), int(r.Weight)}
			if seen[k] {
				t.Errorf("weight %d used twice for v6=%v", r.Weight, r.V6)
			}
			seen[k] = true
			switch r.Name {
			case "dns":
				dns[r.V6] = r.Weight
			case "excluded":
				excluded[r.V6] = r.Weight
			}
		}
		for v6, w := range excluded {
			if dns[v6] <= w {
				t.Errorf("v6=%v: DNS block weight %d is not above the excluded ranges' permit %d", v6, dns[v6], w)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTunnelDNSServer(t *testing.T) {
	tests := []struct {
		prefix string
		want   string // "" for none
	}{
		{"172.19.0.1/30", "172.19.0.2"},
		{"fdfe:dcba:9876::1/126", "fdfe:dcba:9876::2"},
		{"10.0.0.1/24", "10.0.0.2"},
		{"10.0.0.1/31", ""},
		{"10.0.0.0/31", "10.0.0.1"},
		{"10.0.0.2/30", ""}, // .3 is the broadcast address
		{"10.0.0.1/32", ""},
		{"fd00::ffff/112", ""},
		{"fd00::fffe/112", "fd00::ffff"},
	}
	for _, tt := range tests {
		got, ok := tunnelDNSServer(netip.MustParsePrefix(tt.prefix))
		if tt.want == "" {
			if ok {
				t.Errorf("tunnelDNSServer(%s) = %s, want none", tt.prefix, got)
			}
			continue
		}
		if !ok || got != netip.MustParseAddr(tt.want) {
			t.Errorf("tunnelDNSServer(%s) = %s, %v; want %s", tt.prefix, got, ok, tt.want)
		}
	}
	if _, ok := tunnelDNSServer(netip.Prefix{}); ok {
		t.Error("tunnelDNSServer(invalid) reports an address")
	}
}

func TestFwpAddrAndMask(t *testing.T) {
	tests := []struct {
		prefix     string
		addr, mask uint32
	}{
		{"192.168.0.0/16", 0xc0a80000, 0xffff0000},
		{"203.0.113.7/32", 0xcb007107, 0xffffffff},
		{"10.1.2.3/8", 0x0a000000, 0xff000000}, // masked
		{"0.0.0.0/0", 0, 0},
	}
	for _, tt := range tests {
		got := newFwpV4AddrAndMask(netip.MustParsePrefix(tt.prefix))
		if got.addr != tt.addr || got.mask != tt.mask {
			t.Errorf("%s: addr %#x mask %#x, want %#x %#x", tt.prefix, got.addr, got.mask, tt.addr, tt.mask)
		}
	}
	v6 := newFwpV6AddrAndMask(netip.MustParsePrefix("fe80::1/10"))
	if v6.prefixLength != 10 || v6.addr != netip.MustParseAddr("fe80::").As16() {
		t.Errorf("fe80::1/10: %x/%d", v6.addr, v6.prefixLength)
	}
}
