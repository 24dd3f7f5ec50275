package link

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

// Keys from public examples: wg(8)'s man page and Cloudflare WARP's peer.
const (
	wgPriv    = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
	wgPrivEsc = "yAnz5TF%2BlXXJte14tji3zlMNq%2Bhd2rYUIgJBgB3fBmk%3D"
	wgPub     = "bmXOC+F1FxEMF9dyiK2H5/1SUtzH0JuVo51h2wPfgyo="
	wgPubEsc  = "bmXOC%2BF1FxEMF9dyiK2H5%2F1SUtzH0JuVo51h2wPfgyo%3D"
	wgPSK     = "FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE="
)

func wgNode(name, server string, port uint16, o node.WireGuardOptions) node.Node {
	return node.Node{Name: name, Protocol: node.WireGuard, Server: server, Port: port, WireGuard: &o}
}

var wgValidCases = []struct {
	name string
	link string
	want node.Node
}{
	{"v2rayN", "wireguard://" + wgPrivEsc + "@engage.cloudflareclient.com:2408/?publickey=" + wgPubEsc + "&reserved=168%2C26%2C21&address=172.16.0.2%2F32%2C2606%3A4700%3A110%3A8a36%3A%3A1%2F128&mtu=1280#WARP",
		wgNode("WARP", "engage.cloudflareclient.com", 2408, node.WireGuardOptions{PrivateKey: wgPriv, MTU: 1280,
			Addresses: []string{"172.16.0.2/32", "2606:4700:110:8a36::1/128"},
			Peers:     []node.WireGuardPeer{{PublicKey: wgPub, Reserved: [3]byte{168, 26, 21}}}})},
	{"Throne wg", "wg://162.159.192.1:2408?private_key=" + wgPrivEsc + "&public_key=" + wgPubEsc + "&pre_shared_key=" + wgPSK + "&local_address=172.16.0.2/32-2606:4700::2/128&reserved=1-2-3&persistent_keepalive_interval=25#t",
		wgNode("t", "162.159.192.1", 2408, node.WireGuardOptions{PrivateKey: wgPriv,
			Addresses: []string{"172.16.0.2/32", "2606:4700::2/128"},
			Peers:     []node.WireGuardPeer{{PublicKey: wgPub, PresharedKey: wgPSK, Reserved: [3]byte{1, 2, 3}, Keepalive: 25 * time.Second}}})},
	{"Hiddify raw plus and bare ip", "wg://[2606:4700:d0::a29f:c001]:500?pk=" + wgPriv + "&peerpub=" + wgPub + "&ip=10.0.0.2&allowedips=0.0.0.0/0&keepalive=10&dns=1.1.1.1,2606:4700:4700::1111",
		wgNode("[2606:4700:d0::a29f:c001]:500", "2606:4700:d0::a29f:c001", 500, node.WireGuardOptions{PrivateKey: wgPriv,
			Addresses: []string{"10.0.0.2/32"}, DNS: []string{"1.1.1.1", "2606:4700:4700::1111"},
			Peers: []node.WireGuardPeer{{PublicKey: wgPub, AllowedIPs: []string{"0.0.0.0/0"}, Keepalive: 10 * time.Second}}})},
	{"reserved as base64, default port", "wireguard://" + wgPrivEsc + "@example.com?publicKey=" + wgPubEsc + "&Address=10.1.0.2/24&reserved=qBoV",
		wgNode("example.com:51820", "example.com", 51820, node.WireGuardOptions{PrivateKey: wgPriv,
			Addresses: []string{"10.1.0.2/24"}, Peers: []node.WireGuardPeer{{PublicKey: wgPub, Reserved: [3]byte{168, 26, 21}}}})},
	{"awg fields", "awg://" + wgPrivEsc + "@example.com:51820?publickey=" + wgPubEsc + "&address=10.8.0.2/32&jc=4&jmin=40&jmax=70&s1=0&s2=0&h1=1&h2=2&h3=3&h4=4",
		wgNode("example.com:51820", "example.com", 51820, node.WireGuardOptions{PrivateKey: wgPriv,
			Addresses: []string{"10.8.0.2/32"}, Peers: []node.WireGuardPeer{{PublicKey: wgPub}},
			Amnezia: &node.AmneziaOptions{JunkCount: 4, JunkMin: 40, JunkMax: 70, H: [4]string{"1", "2", "3", "4"}}})},
}

var wgBadCases = []struct{ name, link, want string }{
	{"no private key", "wireguard://example.com:2408?publickey=" + wgPubEsc + "&address=10.0.0.2/32", "wireguard: privatekey: missing"},
	{"bad private key", "wireguard://SECRETSECRET@example.com:2408?publickey=" + wgPubEsc + "&address=10.0.0.2/32", "wireguard: privatekey: not a base64 32-byte key"},
	{"no public key", "wireguard://" + wgPrivEsc + "@example.com:2408?address=10.0.0.2/32", "wireguard: publickey: missing"},
	{"no address", "wireguard://" + wgPrivEsc + "@example.com:2408?publickey=" + wgPubEsc, "wireguard: address: missing"},
	{"bad address", "wireguard://" + wgPrivEsc + "@example.com:2408?publickey=" + wgPubEsc + "&address=10.0.0.300", `wireguard: address: not an address "10.0.0.300"`},
	{"bad reserved", "wireguard://" + wgPrivEsc + "@example.com:2408?publickey=" + wgPubEsc + "&address=10.0.0.2&reserved=1,2,300", "wireguard: reserved: not three bytes"},
	{"bad mtu", "wireguard://" + wgPrivEsc + "@example.com:2408?publickey=" + wgPubEsc + "&address=10.0.0.2&mtu=70000", `wireguard: mtu: not an MTU (576-9000) "70000"`},
	{"bad keepalive", "wireguard://" + wgPrivEsc + "@example.com:2408?publickey=" + wgPubEsc + "&address=10.0.0.2&keepalive=soon", `wireguard: keepalive: not a number of seconds "soon"`},
}

func TestWireGuardParse(t *testing.T) {
	for _, tc := range wgValidCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.link)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("Parse:\n got %s\nwant %s", dump(got), dump(&tc.want))
			}
			checkRoundTrip(t, tc.link)
		})
	}
	for _, tc := range wgBadCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.link)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), wgPriv[:10]) {
				t.Fatalf("error %q holds a secret", err)
			}
		})
	}
}

func TestWireGuardFormat(t *testing.T) {
	n := wgValidCases[0].want
	s, err := Format(&n)
	if err != nil {
		t.Fatal(err)
	}
	want := "wireguard://" + wgPrivEsc + "@engage.cloudflareclient.com:2408/?publickey=" + wgPubEsc + "&address=172.16.0.2%2F32%2C2606%3A4700%3A110%3A8a36%3A%3A1%2F128&mtu=1280&reserved=168%2C26%2C21#WARP"
	if s != want {
		t.Fatalf("Format =\n %s\nwant\n %s", s, want)
	}
	two := n
	o := *n.WireGuard
	o.Peers = append(o.Peers, node.WireGuardPeer{Server: "192.0.2.1", Port: 2408, PublicKey: wgPub})
	two.WireGuard = &o
	if _, err := Format(&two); err == nil || !strings.Contains(err.Error(), "one peer") {
		t.Fatalf("Format of two peers = %v, want an error", err)
	}
}

// FuzzWireGuard fuzzes the WireGuard link's query, which FuzzParse's
// general seeds rarely reach.
func FuzzWireGuard(f *testing.F) {
	for _, tc := range wgValidCases {
		f.Add(tc.link)
	}
	for _, tc := range wgBadCases {
		f.Add(tc.link)
	}
	f.Fuzz(checkRoundTrip)
}
