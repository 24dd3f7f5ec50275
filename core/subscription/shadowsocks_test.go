package subscription

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

const ssPSK = "AAAAAAAAAAAAAAAAAAAAAA==" // 16 zero bytes, base64

// TestShadowsocksFields reads the same Shadowsocks servers from the four
// formats and checks the fields and what the outbound makes of them.
func TestShadowsocksFields(t *testing.T) {
	type want struct {
		method, plugin, opts string
		uot, ok              bool
		uotVersion           int
		why                  string
	}
	cases := []struct {
		format string
		body   string
		want   []want
	}{
		{"uri", "ss://2022-blake3-aes-128-gcm:" + strings.ReplaceAll(ssPSK, "=", "%3D") + "@a.example:8388#a\n" +
			"ss://YWVzLTI1Ni1nY206cHc@b.example:443/?plugin=v2ray-plugin%3Btls%3Bhost%3Dcdn.example%3Bpath%3D%2Fws#b\n" +
			"ss://YWVzLTI1Ni1nY206cHc@c.example:80/?plugin=obfs-local%3Bobfs%3Dhttp%3Bobfs-host%3Dwww.bing.com#c\n" +
			"ss://YWVzLTI1Ni1nY206cHc@d.example:80/?plugin=kcptun%3Bkey%3Dx#d\n" +
			"ss://cmM0LW1kNTpwdw@e.example:80#e\n" +
			"ss://YWVzLTI1Ni1nY206cHc@f.example:80/?uot=1#f\n" +
			"ss://YWVzLTI1Ni1nY206cHc@g.example:80/?udp-over-tcp=true&udp-over-tcp-version=2#g\n",
			[]want{
				{method: "2022-blake3-aes-128-gcm", ok: true},
				{method: "aes-256-gcm", plugin: "v2ray-plugin", opts: "tls;host=cdn.example;path=/ws", ok: true},
				{method: "aes-256-gcm", plugin: "obfs-local", opts: "obfs=http;obfs-host=www.bing.com", ok: true},
				{method: "aes-256-gcm", plugin: "kcptun", opts: "key=x", why: "kcptun"},
				{method: "aes-256-gcm", uot: true, uotVersion: 1, ok: true},
				{method: "aes-256-gcm", uot: true, uotVersion: 2, ok: true},
			}},
		{"clash", `proxies:
  - {name: a, type: ss, server: a.example, port: 8388, cipher: 2022-blake3-aes-128-gcm, password: "` + ssPSK + `"}
  - {name: b, type: ss, server: b.example, port: 443, cipher: aes-256-gcm, password: pw, plugin: v2ray-plugin,
     plugin-opts: {mode: websocket, tls: true, host: cdn.example, path: "/ws?x=1", skip-cert-verify: true, mux: true}}
  - {name: c, type: ss, server: c.example, port: 80, cipher: aes-256-gcm, password: pw, plugin: obfs, plugin-opts: {mode: http, host: www.bing.com}}
  - {name: d, type: ss, server: d.example, port: 80, cipher: aes-256-gcm, password: pw, plugin: v2ray-plugin, plugin-opts: {mode: websocket, fingerprint: chrome}}
  - {name: e, type: ss, server: e.example, port: 80, cipher: aes-256-gcm, password: pw, udp-over-tcp: true}
  - {name: f, type: ss, server: f.example, port: 80, cipher: none, password: ""}
  - {name: g, type: ss, server: g.example, port: 80, cipher: aes-256-gcm, password: pw, udp-over-tcp: true, udp-over-tcp-version: 2}
  - {name: h, type: ss, server: h.example, port: 80, cipher: aes-256-gcm, password: pw, udp-over-tcp: true, udp-over-tcp-version: 3}
`,
			[]want{
				{method: "2022-blake3-aes-128-gcm", ok: true},
				{method: "aes-256-gcm", plugin: "v2ray-plugin", opts: `mode=websocket;tls;host=cdn.example;path=/ws?x\=1;mux=1;skip-cert-verify`, ok: true},
				{method: "aes-256-gcm", plugin: "obfs-local", opts: "obfs=http;obfs-host=www.bing.com", ok: true},
				{method: "aes-256-gcm", plugin: "v2ray-plugin", opts: "mode=websocket;fingerprint=chrome", why: `"fingerprint"`},
				{method: "aes-256-gcm", uot: true, uotVersion: 1, ok: true}, // mihomo's default version
				{method: "none", why: "unencrypted"},
				{method: "aes-256-gcm", uot: true, uotVersion: 2, ok: true},
				{method: "aes-256-gcm", uot: true, uotVersion: 3, why: "udp-over-tcp version 3"},
			}},
		{"sing-box", `{"outbounds": [
  {"type": "shadowsocks", "tag": "a", "server": "a.example", "server_port": 8388, "method": "2022-blake3-aes-128-gcm", "password": "` + ssPSK + `"},
  {"type": "shadowsocks", "tag": "b", "server": "b.example", "server_port": 443, "method": "aes-256-gcm", "password": "pw", "plugin": "v2ray-plugin", "plugin_opts": "tls;host=cdn.example"},
  {"type": "shadowsocks", "tag": "e", "server": "e.example", "server_port": 80, "method": "aes-256-gcm", "password": "pw", "udp_over_tcp": {"enabled": true, "version": 1}},
  {"type": "shadowsocks", "tag": "f", "server": "f.example", "server_port": 80, "method": "aes-256-gcm", "password": "pw", "udp_over_tcp": true},
  {"type": "shadowsocks", "tag": "g", "server": "g.example", "server_port": 80, "method": "aes-256-cfb", "password": "pw"}
]}`,
			[]want{
				{method: "2022-blake3-aes-128-gcm", ok: true},
				{method: "aes-256-gcm", plugin: "v2ray-plugin", opts: "tls;host=cdn.example", ok: true},
				{method: "aes-256-gcm", uot: true, uotVersion: 1, ok: true},
				{method: "aes-256-gcm", uot: true, ok: true}, // 0: sing-box's default, 2
				{method: "aes-256-cfb", why: "stream cipher"},
			}},
		{"sip008", `{"version": 1, "servers": [
  {"id": "1", "remarks": "a", "server": "a.example", "server_port": 8388, "password": "` + ssPSK + `", "method": "2022-blake3-aes-128-gcm"},
  {"id": "2", "remarks": "c", "server": "c.example", "server_port": 80, "password": "pw", "method": "aes-256-gcm", "plugin": "obfs-local", "plugin_opts": "obfs=http"}
]}`,
			[]want{
				{method: "2022-blake3-aes-128-gcm", ok: true},
				{method: "aes-256-gcm", plugin: "obfs-local", opts: "obfs=http", ok: true},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			res, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Nodes) != len(tc.want) {
				t.Fatalf("%d nodes (%v), want %d", len(res.Nodes), res.Warnings, len(tc.want))
			}
			for i, w := range tc.want {
				n := res.Nodes[i]
				o := n.Shadowsocks
				if n.Protocol != node.Shadowsocks || o.Method != w.method || o.Plugin != w.plugin || o.PluginOpts != w.opts || o.UDPOverTCP != w.uot || o.UDPOverTCPVersion != w.uotVersion {
					t.Errorf("node %d: %+v, want %+v", i, o, w)
				}
				ok, why := protocol.Supported(n)
				if ok != w.ok || (!ok && !strings.Contains(why, w.why)) {
					t.Errorf("node %d (%s): supported %v %q, want %v %q", i, n.Server, ok, why, w.ok, w.why)
				}
			}
		})
	}
}
