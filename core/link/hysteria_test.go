package link

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

// hysteriaCases are Hysteria v1 links as v1.hysteria.network's URI
// scheme and the clients in the wild write them.
var hysteriaCases = []struct {
	name, link string
	want       node.Node
}{
	{"spec example", "hysteria://host:443?protocol=udp&auth=123456&peer=sni.domain&insecure=1&upmbps=100&downmbps=100&alpn=hysteria&obfs=xplus&obfsParam=123456#remarks",
		node.Node{Name: "remarks", Protocol: node.Hysteria, Server: "host", Port: 443,
			TLS:      &node.TLS{SNI: "sni.domain", ALPN: []string{"hysteria"}, Insecure: true},
			Hysteria: &node.HysteriaOptions{Auth: []byte("123456"), UpMbps: 100, DownMbps: 100, Obfs: "123456"}}},
	{"minimal", "hysteria://198.51.100.7:8443?upmbps=10&downmbps=50",
		node.Node{Name: "198.51.100.7:8443", Protocol: node.Hysteria, Server: "198.51.100.7", Port: 8443,
			Hysteria: &node.HysteriaOptions{UpMbps: 10, DownMbps: 50}}},
	{"Hiddify's lower-cased keys", "hysteria://h.example:1?upmbps=1&downmbps=2&obfs=xplus&obfsparam=k%26y#a%20b",
		node.Node{Name: "a b", Protocol: node.Hysteria, Server: "h.example", Port: 1,
			Hysteria: &node.HysteriaOptions{UpMbps: 1, DownMbps: 2, Obfs: "k&y"}}},
	{"obfsParam without obfs is xplus", "hysteria://h.example:1?upmbps=1&downmbps=2&obfsParam=key",
		node.Node{Name: "h.example:1", Protocol: node.Hysteria, Server: "h.example", Port: 1,
			Hysteria: &node.HysteriaOptions{UpMbps: 1, DownMbps: 2, Obfs: "key"}}},
	{"faketcp kept for the reason", "hysteria://[2001:db8::1]:443?protocol=FakeTCP&upmbps=1&downmbps=1&auth=a%20b",
		node.Node{Name: "[2001:db8::1]:443", Protocol: node.Hysteria, Server: "2001:db8::1", Port: 443,
			Hysteria: &node.HysteriaOptions{Auth: []byte("a b"), UpMbps: 1, DownMbps: 1, Protocol: node.HysteriaFakeTCP}}},
	{"port list keeps the first port", "hysteria://h.example:2000-3000?upmbps=1&downmbps=1",
		node.Node{Name: "h.example:2000", Protocol: node.Hysteria, Server: "h.example", Port: 2000,
			Hysteria: &node.HysteriaOptions{UpMbps: 1, DownMbps: 1}}},
	{"no rates (the outbound refuses it)", "hysteria://h.example:443?auth=x",
		node.Node{Name: "h.example:443", Protocol: node.Hysteria, Server: "h.example", Port: 443,
			Hysteria: &node.HysteriaOptions{Auth: []byte("x")}}},
}

var hysteriaBad = []struct{ name, link, want string }{
	{"no port", "hysteria://h.example?upmbps=1&downmbps=1", "link: hysteria: port: missing"},
	{"unknown obfs", "hysteria://h.example:1?obfs=salamander&obfsParam=SECRET", `link: hysteria: obfs: unknown type "salamander"`},
	{"xplus without key", "hysteria://h.example:1?obfs=xplus", "link: hysteria: obfsParam: empty"},
	{"unknown protocol", "hysteria://h.example:1?protocol=tcp", `link: hysteria: protocol: unknown "tcp"`},
	{"rate not a number", "hysteria://h.example:1?upmbps=fast", "link: hysteria: upmbps: not a number"},
	{"insecure not a flag", "hysteria://h.example:1?insecure=SECRET-VALUE", "link: hysteria: insecure: not a boolean"},
}

func TestParseHysteria(t *testing.T) {
	for _, tc := range hysteriaCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.link)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("Parse:\n got %s\nwant %s", dump(got), dump(&tc.want))
			}
			s, err := Format(got)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			back, err := Parse(s)
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("round trip via %q: %v\n got %s", s, err, dump(back))
			}
			if s2, _ := Format(back); s2 != s {
				t.Fatalf("Format not stable:\n%s\n%s", s, s2)
			}
		})
	}
	for _, tc := range hysteriaBad {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.link)
			if err == nil {
				t.Fatalf("Parse succeeded: %s", dump(n))
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %q, want prefix %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error %q leaks a secret", err)
			}
		})
	}
}

// TestFormatHysteriaRefuses: what no link can carry is an error, not
// dropped.
func TestFormatHysteriaRefuses(t *testing.T) {
	for name, o := range map[string]node.HysteriaOptions{
		"binary auth":    {Auth: []byte{0xff, 0xfe}, UpMbps: 1, DownMbps: 1},
		"receive window": {UpMbps: 1, DownMbps: 1, RecvWindow: 1 << 20},
	} {
		n := &node.Node{Name: "x", Protocol: node.Hysteria, Server: "h.example", Port: 1, Hysteria: &o}
		if s, err := Format(n); err == nil {
			t.Errorf("%s: formatted as %q", name, s)
		}
	}
}

// FuzzParseHysteria is FuzzParse seeded with Hysteria v1 links.
func FuzzParseHysteria(f *testing.F) {
	for _, tc := range hysteriaCases {
		f.Add(tc.link)
	}
	for _, tc := range hysteriaBad {
		f.Add(tc.link)
	}
	f.Fuzz(checkRoundTrip)
}
