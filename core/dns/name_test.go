package dns

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCanonicalName(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"Example.COM.", "example.com", true},
		{"example.com", "example.com", true},
		{"_dmarc.a-b.example", "_dmarc.a-b.example", true},
		{"localhost", "localhost", true},
		{"", "", false},
		{".", "", false},
		{"a..b", "", false},
		{".a", "", false},
		{"a b.com", "", false},
		{"a\\.b.com", "", false},
		{"ex\x00ample.com", "", false},
		{strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com", true},
		{strings.Repeat("a", 64) + ".com", "", false},
		{strings.Repeat("a.", 127), strings.Repeat("a.", 126) + "a", true},
		{strings.Repeat("a.", 127) + "b", "", false},
	}
	for _, tt := range tests {
		got, ok := CanonicalName(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("CanonicalName(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestReverseAddr(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = not a reverse name
	}{
		{"2.0.18.198.in-addr.arpa", "198.18.0.2"},
		{"255.255.19.198.in-addr.arpa", "198.19.255.255"},
		{"2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.1.0.0.6.7.8.9.a.b.c.d.e.f.d.f.ip6.arpa", "fdfe:dcba:9876:18::2"},
		{"1.2.3.in-addr.arpa", ""},
		{"1.2.3.4.5.in-addr.arpa", ""},
		{"256.0.18.198.in-addr.arpa", ""},
		{"02.0.18.198.in-addr.arpa", ""},
		{"x.0.18.198.in-addr.arpa", ""},
		{".0.18.198.in-addr.arpa", ""},
		{"2.0.0.0.ip6.arpa", ""},
		{"g.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.1.0.0.6.7.8.9.a.b.c.d.e.f.d.f.ip6.arpa", ""},
		{"example.com", ""},
	}
	for _, tt := range tests {
		ip, ok := reverseAddr(tt.in)
		if tt.want == "" {
			if ok {
				t.Errorf("reverseAddr(%q) = %s; want none", tt.in, ip)
			}
			continue
		}
		if !ok || ip != netip.MustParseAddr(tt.want) {
			t.Errorf("reverseAddr(%q) = %s, %v; want %s", tt.in, ip, ok, tt.want)
		}
	}
}

func TestIsLocalName(t *testing.T) {
	tests := []struct {
		name  string
		local bool
	}{
		{"printer", true},
		{"localhost", true},
		{"nas.lan", true},
		{"mac.local", true},
		{"router.home.arpa", true},
		{"svc.internal", true},
		{"1.1.168.192.in-addr.arpa", true},
		{"5.0.20.172.in-addr.arpa", true},
		{"20.172.in-addr.arpa", true},
		{"1.0.0.127.in-addr.arpa", true},
		{"1.0.64.100.in-addr.arpa", true},
		{"1.0.0.10.in-addr.arpa", true},
		{"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.e.f.ip6.arpa", true},
		{"example.com", false},
		{"local.example.com", false},
		{"8.8.8.8.in-addr.arpa", false},
		{"5.0.32.172.in-addr.arpa", false},
		{"2.0.18.198.in-addr.arpa", false},
	}
	for _, tt := range tests {
		if got := IsLocalName(tt.name); got != tt.local {
			t.Errorf("IsLocalName(%q) = %v; want %v", tt.name, got, tt.local)
		}
	}
}
