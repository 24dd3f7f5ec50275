package dns

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/direct"
)

func TestNewUpstream(t *testing.T) {
	ob := direct.New(nil)
	tests := []struct {
		in     string
		kind   string // "udp", "tcp", "tls", "https"
		server string // for udp/tcp/tls
	}{
		{"10.0.0.53", "udp", "10.0.0.53:53"},
		{"10.0.0.53:5353", "udp", "10.0.0.53:5353"},
		{"udp://dns.example", "udp", "dns.example:53"},
		{"udp://[2001:db8::1]", "udp", "[2001:db8::1]:53"},
		{"udp://[2001:db8::1]:54", "udp", "[2001:db8::1]:54"},
		{"2001:db8::1", "udp", "[2001:db8::1]:53"},
		{"tcp://1.1.1.1", "tcp", "1.1.1.1:53"},
		{"TCP://1.1.1.1:5300", "tcp", "1.1.1.1:5300"},
		{"tls://dns.example", "tls", "dns.example:853"},
		{"tls://9.9.9.9:8853/", "tls", "9.9.9.9:8853"},
		{"https://1.1.1.1/dns-query", "https", ""},
		{" https://dns.example:8443/q ", "https", ""},
	}
	for _, tt := range tests {
		u, err := NewUpstream(ob, tt.in)
		if err != nil {
			t.Errorf("NewUpstream(%q): %v", tt.in, err)
			continue
		}
		kind, got := upstreamKind(u)
		if kind != tt.kind {
			t.Errorf("NewUpstream(%q) = %s (%T), want %s", tt.in, kind, u, tt.kind)
			continue
		}
		if kind == "https" {
			continue
		}
		if got.String() != tt.server {
			t.Errorf("NewUpstream(%q) server = %s, want %s", tt.in, got, tt.server)
		}
	}
}

// upstreamKind names u's transport and returns its server (none for DoH).
func upstreamKind(u Upstream) (string, flow.Addr) {
	switch v := u.(type) {
	case *UDPUpstream:
		return "udp", v.Server
	case *TCPUpstream:
		return "tcp", v.Server
	case *TLSUpstream:
		return "tls", v.Server
	case *HTTPSUpstream:
		return "https", flow.Addr{}
	}
	return "unknown", flow.Addr{}
}

func TestNewUpstreamErrors(t *testing.T) {
	ob := direct.New(nil)
	for _, tt := range []struct{ in, want string }{
		{"", "empty"},
		{"quic://dns.example", "scheme"},
		{"udp://", "no host"},
		{"udp://1.2.3.4:0", "bad port"},
		{"udp://1.2.3.4:99999", "port"},
		{"tcp://1.2.3.4/dns-query", "host[:port] alone"},
		{"tls://user:secret-token@dns.example", "host[:port] alone"},
		{"https:///dns-query", "want https://host/path"},
	} {
		_, err := NewUpstream(ob, tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewUpstream(%q) = %v, want an error with %q", tt.in, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-token") {
			t.Errorf("NewUpstream(%q): error quotes the address: %v", tt.in, err)
		}
	}
}

func FuzzNewUpstream(f *testing.F) {
	for _, s := range []string{"1.1.1.1", "udp://[::1]:53", "tls://dns.example", "https://1.1.1.1/dns-query", "tcp://a:0", "x://"} {
		f.Add(s)
	}
	ob := direct.New(nil)
	f.Fuzz(func(t *testing.T, s string) {
		u, err := NewUpstream(ob, s)
		if err != nil {
			return
		}
		if u == nil {
			t.Fatalf("NewUpstream(%q) = nil, nil", s)
		}
	})
}
