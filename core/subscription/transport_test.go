package subscription

import (
	"reflect"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

// gRPC and HTTPUpgrade as Clash and sing-box spell them, each read into
// the node's transport and usable.
func TestGRPCAndHTTPUpgradeTransports(t *testing.T) {
	const clashHead = "proxies:\n  - {name: n, type: vless, server: s.example, port: 443, uuid: " + testUUID + ", tls: true, servername: sni.example, "
	const sbHead = `{"outbounds": [{"type": "trojan", "tag": "n", "server": "s.example", "server_port": 443, "password": "pw", "tls": {"enabled": true, "server_name": "sni.example"}, `
	for _, tc := range []struct {
		name string
		doc  string
		want node.Transport
	}{
		{"clash grpc", clashHead + "network: grpc, grpc-opts: {grpc-service-name: gun}}\n",
			node.Transport{Type: node.TransportGRPC, ServiceName: "gun"}},
		{"clash ws http-upgrade", clashHead + "network: ws, ws-opts: {path: /up, headers: {Host: cdn.example}, v2ray-http-upgrade: true}}\n",
			node.Transport{Type: node.TransportHTTPUpgrade, Path: "/up", Host: "cdn.example"}},
		{"clash http-upgrade fast open", clashHead + "network: ws, ws-opts: {path: /up, v2ray-http-upgrade: true, v2ray-http-upgrade-fast-open: true}}\n",
			node.Transport{Type: node.TransportHTTPUpgrade, Path: "/up", MaxEarlyData: 2048}},
		{"sing-box grpc", sbHead + `"transport": {"type": "grpc", "service_name": "TunService"}}]}`,
			node.Transport{Type: node.TransportGRPC, ServiceName: "TunService"}},
		{"sing-box httpupgrade", sbHead + `"transport": {"type": "httpupgrade", "host": "cdn.example", "path": "/up", "headers": {"X-Token": "t"}}}]}`,
			node.Transport{Type: node.TransportHTTPUpgrade, Host: "cdn.example", Path: "/up", Headers: map[string]string{"X-Token": "t"}}},
	} {
		res, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(res.Nodes) != 1 || res.Nodes[0].Transport == nil {
			t.Fatalf("%s: %d nodes, warnings %v", tc.name, len(res.Nodes), res.Warnings)
		}
		n := res.Nodes[0]
		if !reflect.DeepEqual(*n.Transport, tc.want) {
			t.Errorf("%s: transport %+v, want %+v", tc.name, *n.Transport, tc.want)
		}
		if ok, why := protocol.Supported(n); !ok {
			t.Errorf("%s: not usable: %s", tc.name, why)
		}
	}
}
