package subscription

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

// TestShadowTLSForms: Clash's ss with plugin: shadow-tls and sing-box's
// shadowsocks outbound detouring through a shadowtls outbound (with or
// without a server of its own, before or after it) become one Shadowsocks
// node with the shadow-tls plugin that dials the ShadowTLS server; its
// ss:// link parses back to the same node. What Skiff cannot carry is
// dropped with the reason.
func TestShadowTLSForms(t *testing.T) {
	want := &node.Node{Name: "st", Protocol: node.Shadowsocks, Server: "203.0.113.7", Port: 8443,
		Shadowsocks: &node.ShadowsocksOptions{Method: "2022-blake3-aes-128-gcm", Password: "AAAAAAAAAAAAAAAAAAAAAA==", Plugin: "shadow-tls"}}
	clash := `proxies:
  - name: st
    type: ss
    server: 203.0.113.7
    port: 8443
    cipher: 2022-blake3-aes-128-gcm
    password: AAAAAAAAAAAAAAAAAAAAAA==
    client-fingerprint: chrome
    plugin: shadow-tls
    plugin-opts: {host: cloud.tencent.com, password: "st;pw", version: 3, alpn: [h2, http/1.1]}
`
	const stOut = `{"type": "shadowtls", "tag": "st-out", "server": "203.0.113.7", "server_port": 8443, "version": 3, "password": "st;pw",
   "tls": {"enabled": true, "server_name": "cloud.tencent.com", "alpn": ["h2", "http/1.1"], "utls": {"enabled": true, "fingerprint": "chrome"}}}`
	const ssOut = `{"type": "shadowsocks", "tag": "st", "method": "2022-blake3-aes-128-gcm", "password": "AAAAAAAAAAAAAAAAAAAAAA==", "detour": "st-out"}`
	const ssOutServer = `{"type": "shadowsocks", "tag": "st", "server": "127.0.0.1", "server_port": 1, "method": "2022-blake3-aes-128-gcm", "password": "AAAAAAAAAAAAAAAAAAAAAA==", "detour": "st-out"}`
	for name, doc := range map[string]string{
		"clash":                 clash,
		"sing-box":              `{"outbounds": [` + ssOut + `, ` + stOut + `]}`,
		"sing-box-server-first": `{"outbounds": [` + stOut + `, ` + ssOutServer + `]}`,
	} {
		res, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Nodes) != 1 || len(res.Warnings) != 0 {
			t.Fatalf("%s: %d nodes, warnings %v", name, len(res.Nodes), res.Warnings)
		}
		n := res.Nodes[0]
		got := strings.Split(n.Shadowsocks.PluginOpts, ";")
		n.Shadowsocks.PluginOpts = ""
		if !reflect.DeepEqual(n, want) {
			t.Errorf("%s: %+v %+v, want %+v %+v", name, n, n.Shadowsocks, want, want.Shadowsocks)
		}
		for _, o := range []string{"host=cloud.tencent.com", `password=st\;pw`, "version=3", "client-fingerprint=chrome", "alpn=h2,http/1.1"} {
			if !strings.Contains(strings.Join(got, ";"), o) {
				t.Errorf("%s: plugin options %q lack %q", name, got, o)
			}
		}
		n.Shadowsocks.PluginOpts = strings.Join(got, ";")
		if ok, why := protocol.Supported(n); !ok {
			t.Errorf("%s: unusable: %s", name, why)
		}
		s, err := link.Format(n)
		if err != nil {
			t.Fatalf("%s: link: %v", name, err)
		}
		back, err := link.Parse(s)
		if err != nil || !reflect.DeepEqual(back, n) {
			t.Errorf("%s: %s parses to %+v, %v", name, s, back, err)
		}
	}

	// v2 is kept; a detour to nothing that names no server, and VLESS
	// through shadowtls, are dropped with the reason.
	res, err := Parse([]byte(`{"outbounds": [
  {"type": "shadowsocks", "tag": "v2", "method": "aes-128-gcm", "password": "p", "detour": "st2"},
  {"type": "shadowtls", "tag": "st2", "server": "203.0.113.7", "server_port": 443, "version": 2, "password": "x", "tls": {"enabled": true, "server_name": "a.example"}},
  {"type": "shadowsocks", "tag": "lost", "method": "aes-128-gcm", "password": "p", "detour": "nowhere"},
  {"type": "vless", "tag": "vl", "server": "203.0.113.7", "server_port": 443, "uuid": "b831381d-6324-4d53-ad4f-8cda48b30811", "detour": "st2"}
]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 1 || res.Nodes[0].Name != "v2" {
		t.Fatalf("nodes %v, want only v2", res.Nodes)
	}
	if ok, why := protocol.Supported(res.Nodes[0]); !ok || !strings.Contains(res.Nodes[0].Shadowsocks.PluginOpts, "version=2") {
		t.Errorf("v2: %v %q %q", ok, why, res.Nodes[0].Shadowsocks.PluginOpts)
	}
	warned := strings.Join(func() []string {
		var w []string
		for _, x := range res.Warnings {
			w = append(w, x.Reason)
		}
		return w
	}(), "\n")
	for _, w := range []string{`"lost": server: missing`, `"vl": detour "st2": only Shadowsocks`} {
		if !strings.Contains(warned, w) {
			t.Errorf("warnings %q lack %q", warned, w)
		}
	}
}

// FuzzShadowTLSDetours: whatever sing-box document carries shadowtls
// outbounds and detours, the nodes are valid and none keeps the stand-in
// server of a detour.
func FuzzShadowTLSDetours(f *testing.F) {
	f.Add([]byte(`{"outbounds": [{"type": "shadowsocks", "tag": "a", "method": "aes-128-gcm", "password": "p", "detour": "b"},
 {"type": "shadowtls", "tag": "b", "server": "203.0.113.7", "server_port": 443, "version": 3, "password": "x", "tls": {"enabled": true, "server_name": "s.example", "utls": {"enabled": true}}}]}`))
	f.Add([]byte(`{"outbounds": [{"type": "shadowtls", "tag": "b", "server": "[2001:db8::1]", "server_port": 443, "version": 2, "password": "x"},
 {"type": "shadowsocks", "method": "aes-128-gcm", "password": "p", "detour": "b", "plugin": "obfs-local"},
 {"type": "shadowsocks", "tag": "c", "method": "aes-128-gcm", "password": "p", "detour": "c"},
 {"type": "trojan", "tag": "t", "password": "p", "detour": "b"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		res := &Result{Format: FormatSingBox}
		if err := parseSingBox(b, res); err != nil {
			return
		}
		checkResult(t, res, nil)
		for _, n := range res.Nodes {
			if n.Server == detourServer {
				t.Fatalf("node %q kept the detour's stand-in server", n.Name)
			}
		}
	})
}
