package subscription

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

const (
	wgPriv = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
	wgPub  = "bmXOC+F1FxEMF9dyiK2H5/1SUtzH0JuVo51h2wPfgyo="
	wgPSK  = "FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE="
)

const wgClash = `proxies:
  - {name: warp, type: wireguard, server: engage.cloudflareclient.com, port: 2408, ip: 172.16.0.2, ipv6: 2606:4700:110:8a36::1/128,
     private-key: ` + wgPriv + `, public-key: ` + wgPub + `, reserved: [168, 26, 21], mtu: 1280, udp: true, dns: [1.1.1.1]}
  - {name: b64, type: wireguard, server: 162.159.192.1, port: 2408, ip: 172.16.0.2, private-key: ` + wgPriv + `, public-key: ` + wgPub + `,
     pre-shared-key: ` + wgPSK + `, reserved: qBoV, persistent-keepalive: 25, allowed-ips: ['0.0.0.0/0']}
  - name: peers
    type: wireguard
    ip: 10.0.0.2/32
    private-key: ` + wgPriv + `
    peers:
      - {server: 192.0.2.1, port: 51820, public-key: ` + wgPub + `, allowed-ips: ['10.0.0.0/24']}
      - {server: 192.0.2.2, port: 51821, public-key: ` + wgPub + `, reserved: [1, 2, 3]}
  - {name: awg, type: wireguard, server: 192.0.2.3, port: 51820, ip: 10.8.0.2, private-key: ` + wgPriv + `, public-key: ` + wgPub + `,
     amnezia-wg-option: {jc: 4, jmin: 40, jmax: 70, h1: 1, h2: 2, h3: 3, h4: 4}}
  - {name: bad, type: wireguard, server: 192.0.2.4, port: 51820, ip: 10.8.0.2, private-key: SECRET, public-key: ` + wgPub + `}
`

const wgSingBox = `{"endpoints": [
  {"type": "wireguard", "tag": "warp", "mtu": 1280, "address": ["172.16.0.2/32", "2606:4700:110:8a36::1/128"], "private_key": "` + wgPriv + `",
   "peers": [{"address": "engage.cloudflareclient.com", "port": 2408, "public_key": "` + wgPub + `", "reserved": [168, 26, 21], "allowed_ips": ["0.0.0.0/0", "::/0"]}]},
  {"type": "wireguard", "tag": "peers", "address": "10.0.0.2/32", "private_key": "` + wgPriv + `",
   "peers": [{"address": "192.0.2.1", "port": 51820, "public_key": "` + wgPub + `", "allowed_ips": ["10.0.0.0/24"]},
             {"address": "192.0.2.2", "port": 51821, "public_key": "` + wgPub + `", "reserved": [1, 2, 3], "persistent_keepalive_interval": 25}]}
], "outbounds": [
  {"type": "wireguard", "tag": "legacy", "server": "162.159.192.1", "server_port": 2408, "local_address": ["172.16.0.2/32"], "private_key": "` + wgPriv + `",
   "peer_public_key": "` + wgPub + `", "pre_shared_key": "` + wgPSK + `", "reserved": "qBoV"}
]}`

func TestWireGuardClash(t *testing.T) {
	res, err := Parse([]byte(wgClash))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 4 || len(res.Warnings) != 1 {
		t.Fatalf("%d nodes, warnings %v; want 4 and one", len(res.Nodes), res.Warnings)
	}
	if w := res.Warnings[0].Reason; !strings.Contains(w, `"bad"`) || !strings.Contains(w, "private-key") || strings.Contains(w, "SECRET") {
		t.Errorf("warning %q", w)
	}
	want := []node.Node{
		{Name: "warp", Protocol: node.WireGuard, Server: "engage.cloudflareclient.com", Port: 2408, WireGuard: &node.WireGuardOptions{
			PrivateKey: wgPriv, Addresses: []string{"172.16.0.2/32", "2606:4700:110:8a36::1/128"}, MTU: 1280, DNS: []string{"1.1.1.1"},
			Peers: []node.WireGuardPeer{{PublicKey: wgPub, Reserved: [3]byte{168, 26, 21}}}}},
		{Name: "b64", Protocol: node.WireGuard, Server: "162.159.192.1", Port: 2408, WireGuard: &node.WireGuardOptions{
			PrivateKey: wgPriv, Addresses: []string{"172.16.0.2/32"},
			Peers: []node.WireGuardPeer{{PublicKey: wgPub, PresharedKey: wgPSK, Reserved: [3]byte{168, 26, 21}, Keepalive: 25 * time.Second, AllowedIPs: []string{"0.0.0.0/0"}}}}},
		{Name: "peers", Protocol: node.WireGuard, Server: "192.0.2.1", Port: 51820, WireGuard: &node.WireGuardOptions{
			PrivateKey: wgPriv, Addresses: []string{"10.0.0.2/32"},
			Peers: []node.WireGuardPeer{{PublicKey: wgPub, AllowedIPs: []string{"10.0.0.0/24"}},
				{Server: "192.0.2.2", Port: 51821, PublicKey: wgPub, Reserved: [3]byte{1, 2, 3}}}}},
		{Name: "awg", Protocol: node.WireGuard, Server: "192.0.2.3", Port: 51820, WireGuard: &node.WireGuardOptions{
			PrivateKey: wgPriv, Addresses: []string{"10.8.0.2/32"}, Peers: []node.WireGuardPeer{{PublicKey: wgPub}},
			Amnezia: &node.AmneziaOptions{JunkCount: 4, JunkMin: 40, JunkMax: 70, H: [4]string{"1", "2", "3", "4"}}}},
	}
	for i := range want {
		if !reflect.DeepEqual(res.Nodes[i], &want[i]) {
			t.Errorf("node %d:\n got %+v\nwant %+v", i, res.Nodes[i].WireGuard, want[i].WireGuard)
		}
	}
	checkWireGuardSupport(t, res.Nodes)
}

func TestWireGuardSingBox(t *testing.T) {
	res, err := Parse([]byte(wgSingBox))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 3 || len(res.Warnings) != 0 {
		t.Fatalf("%d nodes, warnings %v; want 3 and none", len(res.Nodes), res.Warnings)
	}
	want := []node.Node{
		{Name: "warp", Protocol: node.WireGuard, Server: "engage.cloudflareclient.com", Port: 2408, WireGuard: &node.WireGuardOptions{
			PrivateKey: wgPriv, Addresses: []string{"172.16.0.2/32", "2606:4700:110:8a36::1/128"}, MTU: 1280,
			Peers: []node.WireGuardPeer{{PublicKey: wgPub, Reserved: [3]byte{168, 26, 21}, AllowedIPs: []string{"0.0.0.0/0", "::/0"}}}}},
		{Name: "peers", Protocol: node.WireGuard, Server: "192.0.2.1", Port: 51820, WireGuard: &node.WireGuardOptions{
			PrivateKey: wgPriv, Addresses: []string{"10.0.0.2/32"},
			Peers: []node.WireGuardPeer{{PublicKey: wgPub, AllowedIPs: []string{"10.0.0.0/24"}},
				{Server: "192.0.2.2", Port: 51821, PublicKey: wgPub, Reserved: [3]byte{1, 2, 3}, Keepalive: 25 * time.Second}}}},
		{Name: "legacy", Protocol: node.WireGuard, Server: "162.159.192.1", Port: 2408, WireGuard: &node.WireGuardOptions{
			PrivateKey: wgPriv, Addresses: []string{"172.16.0.2/32"},
			Peers: []node.WireGuardPeer{{PublicKey: wgPub, PresharedKey: wgPSK, Reserved: [3]byte{168, 26, 21}}}}},
	}
	for i := range want {
		if !reflect.DeepEqual(res.Nodes[i], &want[i]) {
			t.Errorf("node %d:\n got %+v\nwant %+v", i, res.Nodes[i].WireGuard, want[i].WireGuard)
		}
	}
	checkWireGuardSupport(t, res.Nodes)
}

// checkWireGuardSupport: the nodes are usable (AmneziaWG 1.0 included).
func checkWireGuardSupport(t *testing.T, nodes []*node.Node) {
	t.Helper()
	for _, n := range nodes {
		if ok, why := protocol.Supported(n); !ok {
			t.Errorf("%s: not supported: %s", n.Name, why)
		}
	}
}

func FuzzWireGuardImports(f *testing.F) {
	f.Add([]byte(wgClash))
	f.Add([]byte(wgSingBox))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := Parse(b)
		if err != nil {
			return
		}
		checkResult(t, res, nil)
	})
}
