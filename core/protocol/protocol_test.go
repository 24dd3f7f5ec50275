package protocol

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

// TestUnusable checks that a node needing what Skiff lacks is named as
// data (feature and value) beside its English reason, and that a node
// with wrong settings or one Skiff can dial gets no Lack.
func TestUnusable(t *testing.T) {
	const uuid = "b831381d-6324-4d53-ad4f-8cda48b30811"
	vless := func(f func(*node.Node)) *node.Node {
		n := &node.Node{Name: "n", Protocol: node.VLESS, Server: "192.0.2.1", Port: 443, VLESS: &node.VLESSOptions{UUID: uuid}}
		f(n)
		return n
	}
	ss := func(method, password string) *node.Node {
		return &node.Node{Name: "n", Protocol: node.Shadowsocks, Server: "192.0.2.1", Port: 8388, Shadowsocks: &node.ShadowsocksOptions{Method: method, Password: password}}
	}
	for _, tt := range []struct {
		name     string
		n        *node.Node
		lack     *node.Lack
		inReason string
	}{
		{"dialable", vless(func(*node.Node) {}), nil, ""},
		{"transport", vless(func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportTCP, HeaderType: "http"} }), &node.Lack{Feature: node.FeatureTransport, Value: "tcp+http"}, `tcp header type "http"`},
		{"multiplex", vless(func(n *node.Node) { n.Multiplex = "mux.cool" }), &node.Lack{Feature: node.FeatureMultiplex, Value: "mux.cool"}, `multiplex "mux.cool"`},
		{"encryption", vless(func(n *node.Node) { n.VLESS.Encryption = "mlkem768x25519plus" }), &node.Lack{Feature: node.FeatureCipher, Value: "mlkem768x25519plus"}, "encryption"},
		{"vmess security", &node.Node{Name: "n", Protocol: node.VMess, Server: "192.0.2.1", Port: 443, VMess: &node.VMessOptions{UUID: uuid, Security: "aes-256-cfb"}},
			&node.Lack{Feature: node.FeatureCipher, Value: "aes-256-cfb"}, "security"},
		{"stream cipher", ss("rc4-md5", "secret"), &node.Lack{Feature: node.FeatureCipher, Value: "rc4-md5"}, "rc4-md5"},
		{"wrong settings", ss("2022-blake3-aes-128-gcm", "not base64!"), nil, "key"},
		{"amneziawg 1.5", &node.Node{Name: "n", Protocol: node.WireGuard, Server: "192.0.2.1", Port: 2408, WireGuard: &node.WireGuardOptions{
			PrivateKey: "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=", Addresses: []string{"172.16.0.2/32"},
			Peers: []node.WireGuardPeer{{PublicKey: "bmXOC+F1FxEMF9dyiK2H5/1SUtzH0JuVo51h2wPfgyo="}}, Amnezia: &node.AmneziaOptions{JunkCount: 4, I: [5]string{"<b 0xf6ab>"}}}},
			&node.Lack{Feature: node.FeatureOption, Value: "amneziawg"}, "AmneziaWG 1.5"},
	} {
		reason, lack := Unusable(tt.n)
		switch {
		case (lack == nil) != (tt.lack == nil) || lack != nil && *lack != *tt.lack:
			t.Errorf("%s: lack = %+v, want %+v (reason %q)", tt.name, lack, tt.lack, reason)
		case tt.inReason == "" && reason != "":
			t.Errorf("%s: reason = %q, want none", tt.name, reason)
		case !strings.Contains(strings.ToLower(reason), strings.ToLower(tt.inReason)):
			t.Errorf("%s: reason = %q, want it to say %q", tt.name, reason, tt.inReason)
		case strings.Contains(reason, `"n"`) || strings.Contains(reason, "192.0.2.1"):
			t.Errorf("%s: reason = %q repeats the node's name or address", tt.name, reason)
		}
		if ok, r := Supported(tt.n); ok != (reason == "") || r != reason {
			t.Errorf("%s: Supported = %v, %q; Unusable said %q", tt.name, ok, r, reason)
		}
	}
}
