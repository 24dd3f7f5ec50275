package subscription

import (
	"bytes"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
)

const testUUID = "b831381d-6324-4d53-ad4f-8cda48b30811"

// uriList is a provider's plain list: BOM, CRLF, comments, blank lines,
// percent-escaped credentials and names, unicode, an IPv6 host and schemes
// Skiff does not know.
var uriList = "\ufeff# Example provider — updated daily\r\n" +
	"hysteria2://p%40ss%3Aword@[2001:db8::1]:8443/?sni=hy.example.com&obfs=salamander&obfs-password=k3y#%F0%9F%87%AF%F0%9F%87%B5%20Tokyo%2001\r\n" +
	"\r\n" +
	"vless://" + testUUID + "@cdn.example.org:443?encryption=none&security=tls&sni=cdn.example.org&type=ws&host=cdn.example.org&path=%2Fws%3Fed%3D2048#香港 02\r\n" +
	"// a comment in another style\r\n" +
	"ssr://c29tZXRoaW5nOjQ0MzpvcmlnaW46YWVzLTI1Ni1jZmI6cGxhaW46cGFzcw\r\n" +
	"not a link at all\r\n" +
	"hy2://auth@hy2.example.net#plain\r\n" +
	"vless://" + testUUID + "@reality.example.com:443?encryption=none&security=reality&sni=www.microsoft.com&pbk=7xhH4b_VkliBxGulljcyPOH-bYUA2dl-XAdZAsfhk04&sid=6ba85179e30d4fc2&fp=chrome&flow=xtls-rprx-vision&type=tcp#Reality\r\n" +
	"trojan://secret@trojan.example.com:443?sni=trojan.example.com#Trojan\n"

func TestParseURIList(t *testing.T) {
	res, err := Parse([]byte(uriList))
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatURIList {
		t.Errorf("format %s", res.Format)
	}
	names := nodeNames(res)
	want := []string{"🇯🇵 Tokyo 01", "香港 02", "plain", "Reality", "Trojan"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	hy := res.Nodes[0]
	if hy.Server != "2001:db8::1" || hy.Port != 8443 || hy.Hysteria2.Auth != "p@ss:word" || hy.TLS.SNI != "hy.example.com" {
		t.Errorf("hysteria2 node: %+v %+v", hy, hy.Hysteria2)
	}
	vl := res.Nodes[1]
	if vl.Transport == nil || vl.Transport.Type != node.TransportWS || vl.Transport.Path != "/ws" || vl.Transport.MaxEarlyData != 2048 {
		t.Errorf("vless transport: %+v", vl.Transport)
	}
	wantWarn := []int{6, 7}
	if got := warnLines(res); !reflect.DeepEqual(got, wantWarn) {
		t.Errorf("warning lines %v, want %v (%v)", got, wantWarn, res.Warnings)
	}
	if res.Unsupported() != 0 { // REALITY with Vision is supported
		t.Errorf("unsupported %d, want 0", res.Unsupported())
	}
	for _, w := range res.Warnings {
		if strings.Contains(w.Reason, "c29tZXRo") {
			t.Errorf("warning echoes the line: %s", w)
		}
	}
}

func TestParseBase64Variants(t *testing.T) {
	plain, err := Parse([]byte(uriList))
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(uriList)
	wrapped := func(s string) string { // MIME-style line breaks
		var b strings.Builder
		for len(s) > 76 {
			b.WriteString(s[:76] + "\r\n")
			s = s[76:]
		}
		return b.String() + s + "\n"
	}
	for name, body := range map[string]string{
		"std padded":       base64.StdEncoding.EncodeToString(raw),
		"std raw":          base64.RawStdEncoding.EncodeToString(raw),
		"url padded":       base64.URLEncoding.EncodeToString(raw),
		"url raw":          base64.RawURLEncoding.EncodeToString(raw),
		"wrapped CRLF":     wrapped(base64.StdEncoding.EncodeToString(raw)),
		"BOM and newlines": "\ufeff\n" + base64.StdEncoding.EncodeToString(raw) + "\n\n",
		"LF list":          base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(uriList, "\r\n", "\n"))),
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Parse([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != FormatBase64 {
				t.Errorf("format %s", res.Format)
			}
			if !reflect.DeepEqual(res.Nodes, plain.Nodes) {
				t.Errorf("nodes differ from the plain list")
			}
			if !reflect.DeepEqual(warnLines(res), warnLines(plain)) {
				t.Errorf("warnings %v, want %v", res.Warnings, plain.Warnings)
			}
		})
	}
}

// clashYAML is a mihomo config as providers serve it: anchors and merge
// keys, every protocol, transports, types Skiff does not know, groups and
// rules that Skiff ignores here.
const clashYAML = `# mihomo profile
mixed-port: 7890
allow-lan: false
mode: rule
x-common: &common
  udp: true
  skip-cert-verify: false

proxies:
  - name: "🇺🇸 US Hysteria2"
    type: hysteria2
    server: us.example.com
    port: 443
    ports: 443,20000-30000
    hop-interval: 15
    password: "hy-pass"
    up: "50 Mbps"
    down: 200
    obfs: salamander
    obfs-password: "obfs-key"
    sni: us.example.com
    alpn: [h3]
    <<: *common
  - {name: "日本 VLESS WS", type: vless, server: "2001:db8::2", port: "8443", uuid: ` + testUUID + `, tls: true, servername: jp.example.com, network: ws, client-fingerprint: chrome, ws-opts: {path: "/vl?ed=2560", headers: {Host: cdn.example.com, X-Extra: "1"}}}
  - name: vless-reality
    type: vless
    server: 203.0.113.9
    port: 443
    uuid: ` + testUUID + `
    flow: xtls-rprx-vision
    tls: true
    servername: www.apple.com
    reality-opts:
      public-key: 7xhH4b_VkliBxGulljcyPOH-bYUA2dl-XAdZAsfhk04
      short-id: 6ba85179e30d4fc2
  - name: vmess-grpc
    type: vmess
    server: vm.example.com
    port: 443
    uuid: ` + testUUID + `
    alterId: 0
    cipher: aes-128-cfb
    tls: true
    network: grpc
    grpc-opts:
      grpc-service-name: gun
  - name: ss-obfs
    type: ss
    server: ss.example.com
    port: 8388
    cipher: 2022-blake3-aes-128-gcm
    password: "AAAAAAAAAAAAAAAAAAAAAA=="
    plugin: obfs
    plugin-opts: {mode: tls, host: bing.com}
  - name: trojan-ws
    type: trojan
    server: tr.example.com
    port: 443
    password: tpass
    network: ws
    ws-opts: {path: /tr}
    sni: tr.example.com
  - name: tuic
    type: tuic
    server: tuic.example.com
    port: 443
    uuid: ` + testUUID + `
    password: tuicpass
    congestion-controller: bbr
    udp-relay-mode: native
    alpn: [h3]
  - name: anytls
    type: anytls
    server: any.example.com
    port: 443
    password: apass
    client-fingerprint: chrome
  - name: home-socks
    type: socks5
    server: 192.0.2.1
    port: 1080
  - name: tuic-v4
    type: tuic
    server: old.example.com
    port: 443
    token: t
  - name: broken
    type: vless
    server: b.example.com
    port: [1, 2]
  - name: no-port
    type: trojan
    server: np.example.com
    password: x

proxy-groups:
  - name: PROXY
    type: select
    proxies: ["🇺🇸 US Hysteria2", "日本 VLESS WS"]
rules:
  - MATCH,PROXY
`

func TestParseClash(t *testing.T) {
	res, err := Parse([]byte(clashYAML))
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatClash {
		t.Fatalf("format %s", res.Format)
	}
	want := []string{"🇺🇸 US Hysteria2", "日本 VLESS WS", "vless-reality", "vmess-grpc", "ss-obfs", "trojan-ws", "tuic", "anytls"}
	if got := nodeNames(res); !reflect.DeepEqual(got, want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	if got := warnLines(res); !reflect.DeepEqual(got, []int{78, 82, 87, 91}) {
		t.Errorf("warning lines %v (%v)", got, res.Warnings)
	}
	hy := res.Nodes[0]
	wantHy := &node.Node{
		Name: "🇺🇸 US Hysteria2", Protocol: node.Hysteria2, Server: "us.example.com", Port: 443,
		TLS: &node.TLS{SNI: "us.example.com", ALPN: []string{"h3"}},
		Hysteria2: &node.Hysteria2Options{Auth: "hy-pass", Ports: "443,20000-30000", HopInterval: 15 * time.Second,
			Obfs: "salamander", ObfsPassword: "obfs-key", UpMbps: 50, DownMbps: 200},
	}
	if !reflect.DeepEqual(hy, wantHy) {
		t.Errorf("hysteria2:\n got %+v %+v %+v\nwant %+v", hy, hy.TLS, hy.Hysteria2, wantHy)
	}
	vl := res.Nodes[1]
	wantVL := &node.Node{
		Name: "日本 VLESS WS", Protocol: node.VLESS, Server: "2001:db8::2", Port: 8443,
		TLS:       &node.TLS{SNI: "jp.example.com", Fingerprint: "chrome"},
		Transport: &node.Transport{Type: node.TransportWS, Path: "/vl", Host: "cdn.example.com", Headers: map[string]string{"X-Extra": "1"}, MaxEarlyData: 2560},
		VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"},
	}
	if !reflect.DeepEqual(vl, wantVL) {
		t.Errorf("vless:\n got %+v %+v %+v\nwant %+v", vl, vl.TLS, vl.Transport, wantVL)
	}
	if ok, _ := protocol.Supported(vl); !ok {
		t.Error("vless+ws+tls not supported")
	}
	if r := res.Nodes[2].TLS.Reality; r == nil || r.ShortID != "6ba85179e30d4fc2" {
		t.Errorf("reality: %+v", r)
	}
	if ok, why := protocol.Supported(res.Nodes[2]); !ok {
		t.Errorf("reality+vision node not supported: %q", why)
	}
	if g := res.Nodes[3].Transport; g == nil || g.Type != node.TransportGRPC || g.ServiceName != "gun" {
		t.Errorf("vmess grpc: %+v", g)
	}
	if ss := res.Nodes[4].Shadowsocks; ss.Plugin != "obfs-local" || ss.PluginOpts != "obfs=tls;obfs-host=bing.com" {
		t.Errorf("ss plugin: %+v", ss)
	}
	if tr := res.Nodes[5]; tr.TLS == nil || tr.Transport.Path != "/tr" {
		t.Errorf("trojan: %+v", tr)
	}
	reasons := ""
	for _, w := range res.Warnings {
		reasons += w.String() + "\n"
	}
	for _, s := range []string{"socks5", "TUIC v4", "broken", "no-port"} {
		if !strings.Contains(reasons, s) {
			t.Errorf("warnings lack %q:\n%s", s, reasons)
		}
	}
}

// singBoxJSON is a sing-box client config as a provider serves it.
const singBoxJSON = `{
  "log": {"level": "info"},
  "dns": {"servers": [{"tag": "remote", "address": "tls://8.8.8.8"}]},
  "outbounds": [
    {"type": "selector", "tag": "proxy", "outbounds": ["hy2", "vless-ws"]},
    {
      "type": "hysteria2", "tag": "hy2 🇩🇪",
      "server": "de.example.com", "server_ports": ["443", "20000:30000"], "hop_interval": "1m",
      "password": "pw", "up_mbps": 30, "down_mbps": 150,
      "obfs": {"type": "salamander", "password": "ob"},
      "tls": {"enabled": true, "server_name": "de.example.com", "alpn": "h3"}
    },
    {
      "type": "vless", "tag": "vless-ws",
      "server": "2001:db8::3", "server_port": 443, "uuid": "` + testUUID + `",
      "tls": {"enabled": true, "server_name": "ws.example.com", "utls": {"enabled": true, "fingerprint": "firefox"}},
      "transport": {"type": "ws", "path": "/ws", "headers": {"Host": "cdn.example.com"}, "max_early_data": 2048, "early_data_header_name": "Sec-WebSocket-Protocol"}
    },
    {"type": "vless", "tag": "reality", "server": "r.example.com", "server_port": 443, "uuid": "` + testUUID + `", "flow": "xtls-rprx-vision",
     "tls": {"enabled": true, "server_name": "www.apple.com", "reality": {"enabled": true, "public_key": "7xhH4b_VkliBxGulljcyPOH-bYUA2dl-XAdZAsfhk04", "short_id": "01"}}},
    {"type": "tuic", "tag": "tuic", "server": "t.example.com", "server_port": 443, "uuid": "` + testUUID + `", "password": "p", "congestion_control": "bbr", "tls": {"enabled": true, "alpn": ["h3"]}},
    {"type": "shadowsocks", "tag": "ss", "server": "ss.example.com", "server_port": 8388, "method": "aes-256-gcm", "password": "p"},
    {"type": "wireguard", "tag": "wg", "server": "wg.example.com", "server_port": 51820},
    {"type": "vmess", "tag": "bad-port", "server": "v.example.com", "server_port": "443", "uuid": "` + testUUID + `"},
    {"type": "direct", "tag": "direct"},
    {"type": "block", "tag": "block"}
  ],
  "route": {"final": "proxy"}
}`

func TestParseHopInterval(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"", 0, false},
		{"30", 30 * time.Second, false},
		{" 10 ", 10 * time.Second, false},
		{"30s", 30 * time.Second, false},
		{"1m30s", 90 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false}, // the client raises it to its minimum
		{"-5s", 0, true},
		{"soon", 0, true},
	} {
		got, err := parseHopInterval(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseHopInterval(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestHopIntervalFields checks the sing-box and Clash spellings of the
// hop interval, and that a bad one skips the node with a warning.
func TestHopIntervalFields(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       time.Duration
		bad        bool
	}{
		{"sing-box string", `{"outbounds": [{"type": "hysteria2", "tag": "a", "server": "a.example.com", "server_ports": "20000:20009", "password": "p", "hop_interval": "20s"}]}`, 20 * time.Second, false},
		{"sing-box number", `{"outbounds": [{"type": "hysteria2", "tag": "a", "server": "a.example.com", "server_ports": "20000:20009", "password": "p", "hop_interval": 12}]}`, 12 * time.Second, false},
		{"sing-box unset", `{"outbounds": [{"type": "hysteria2", "tag": "a", "server": "a.example.com", "server_ports": "20000:20009", "password": "p"}]}`, 0, false},
		{"sing-box bad", `{"outbounds": [{"type": "hysteria2", "tag": "a", "server": "a.example.com", "server_ports": "20000:20009", "password": "p", "hop_interval": "often"}]}`, 0, true},
		{"clash seconds", "proxies:\n  - {name: a, type: hysteria2, server: a.example.com, ports: 20000-20009, password: p, hop-interval: 25}\n", 25 * time.Second, false},
		{"clash unset", "proxies:\n  - {name: a, type: hysteria2, server: a.example.com, ports: 20000-20009, password: p}\n", 0, false},
		{"clash bad", "proxies:\n  - {name: a, type: hysteria2, server: a.example.com, ports: 20000-20009, password: p, hop-interval: often}\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Parse([]byte(tc.body))
			if tc.bad {
				if err == nil && len(res.Nodes) > 0 {
					t.Fatalf("bad hop interval accepted: %+v", res.Nodes[0].Hysteria2)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Nodes[0].Hysteria2.HopInterval; got != tc.want {
				t.Errorf("HopInterval %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseSingBox(t *testing.T) {
	res, err := Parse([]byte(singBoxJSON))
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatSingBox {
		t.Fatalf("format %s", res.Format)
	}
	want := []string{"hy2 🇩🇪", "vless-ws", "reality", "tuic", "ss"}
	if got := nodeNames(res); !reflect.DeepEqual(got, want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	if got := warnLines(res); !reflect.DeepEqual(got, []int{23, 24}) {
		t.Errorf("warning lines %v (%v)", got, res.Warnings)
	}
	hy := res.Nodes[0]
	if hy.Port != 443 || hy.Hysteria2.Ports != "443,20000-30000" || hy.Hysteria2.HopInterval != time.Minute ||
		hy.Hysteria2.Obfs != "salamander" || hy.TLS.ALPN[0] != "h3" {
		t.Errorf("hysteria2: %+v %+v", hy, hy.Hysteria2)
	}
	vl := res.Nodes[1]
	wantT := &node.Transport{Type: node.TransportWS, Path: "/ws", Host: "cdn.example.com", MaxEarlyData: 2048, EarlyDataHeader: "Sec-WebSocket-Protocol"}
	if !reflect.DeepEqual(vl.Transport, wantT) || vl.Server != "2001:db8::3" || vl.TLS.Fingerprint != "firefox" {
		t.Errorf("vless: %+v %+v", vl, vl.Transport)
	}
	if strings.Contains(res.Warnings[1].Reason, "443") {
		t.Errorf("warning quotes a value: %s", res.Warnings[1].Reason)
	}
}

const sip008JSON = `{
  "version": 1,
  "servers": [
    {
      "id": "27b8a625-4f4b-4428-9f0f-8a2317db7c79",
      "remarks": "Server 🇸🇬",
      "server": "sg.example.com",
      "server_port": 8388,
      "password": "example",
      "method": "chacha20-ietf-poly1305",
      "plugin": "v2ray-plugin",
      "plugin_opts": "server"
    },
    {
      "id": "7842c068-c667-41f2-8f7d-04feece3cb67",
      "remarks": "no password",
      "server": "x.example.com",
      "server_port": 8388,
      "method": "aes-256-gcm"
    },
    {"remarks": "v6", "server": "2001:db8::5", "server_port": 443, "password": "p", "method": "aes-128-gcm"}
  ],
  "bytes_used": 274877906944,
  "bytes_remaining": 824633720832
}`

func TestParseSIP008(t *testing.T) {
	res, err := Parse([]byte(sip008JSON))
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatSIP008 || len(res.Nodes) != 2 {
		t.Fatalf("format %s, %d nodes", res.Format, len(res.Nodes))
	}
	if got := warnLines(res); !reflect.DeepEqual(got, []int{14}) {
		t.Errorf("warning lines %v (%v)", got, res.Warnings)
	}
	ss := res.Nodes[0]
	if ss.Name != "Server 🇸🇬" || ss.Shadowsocks.Method != "chacha20-ietf-poly1305" || ss.Shadowsocks.Plugin != "v2ray-plugin" {
		t.Errorf("node %+v %+v", ss, ss.Shadowsocks)
	}
	if res.UserInfo == nil || res.UserInfo.Total != 274877906944+824633720832 || res.UserInfo.Remaining() != 824633720832 {
		t.Errorf("userinfo %+v", res.UserInfo)
	}
}

func TestParseErrors(t *testing.T) {
	bomb := "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
	prev := "a"
	for _, l := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += l + ": &" + l + " [*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + "]\n"
		prev = l
	}
	for _, tc := range []struct {
		name string
		body string
		is   error
		msg  string
	}{
		{"empty", "", ErrEmpty, ""},
		{"blank with BOM", "\ufeff \r\n\n", ErrEmpty, ""},
		{"html", "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>", ErrHTML, ""},
		{"html login", "  <html lang=\"en\"><body>Please log in</body></html>", ErrHTML, ""},
		{"truncated json", `{"outbounds": [{"type": "hysteria2", "server": "a.example.com",`, nil, "truncated"},
		{"json wrong shape", `{"inbounds": []}`, ErrUnknownFormat, "outbounds"},
		{"json array", `[{"server": "x"}]`, ErrUnknownFormat, ""},
		{"broken base64", "aHlzdGVyaWEyOi8vYUBi*LmNvbQ==", ErrUnknownFormat, ""},
		{"base64 bad length", "aHlzdGVyaWEyOi8vYUBiLmNvbQ=x", nil, "base64"},
		{"base64 of garbage", base64.StdEncoding.EncodeToString([]byte("\x00\x01\x02garbage")), ErrUnknownFormat, "base64"},
		{"invalid utf-8", "\xff\xfe\xfd proxies", ErrUnknownFormat, "UTF-8"},
		{"yaml without proxies", "port: 7890\nmode: rule\n", ErrUnknownFormat, "proxies"},
		{"yaml providers only", "proxy-providers:\n  p1:\n    type: http\n    url: https://x.example/\n", ErrNoNodes, "proxy-providers"},
		{"yaml proxies not a list", "proxies: 5\n", nil, "not a list"},
		{"yaml alias bomb", bomb + "proxies: *i\n", nil, "alias"},
		{"yaml alias bomb in entry", bomb + "proxies:\n  - name: x\n    type: ss\n    server: a\n    port: 1\n    cipher: aes-128-gcm\n    password: p\n    plugin: foo\n    plugin-opts: {a: *i}\n", nil, "alias"},
		{"prose", "Your subscription has expired.\nPlease renew.", ErrUnknownFormat, ""},
		{"only bad links", "vless://nope@\nhysteria2://\n", ErrNoNodes, "2 entries"},
		{"clash empty proxies", "proxies: []\n", ErrNoNodes, ""},
		{"too large", strings.Repeat("a", MaxBodySize+1), ErrTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := Parse([]byte(tc.body))
			if err == nil {
				t.Fatalf("no error; %d nodes", len(res.Nodes))
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestAliasBombOutsideProxies: aliases elsewhere are never expanded.
func TestAliasBombOutsideProxies(t *testing.T) {
	bomb := "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
	prev := "a"
	for _, l := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += l + ": &" + l + " [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]\n"
		prev = l
	}
	body := bomb + "proxies:\n  - {name: a, type: hysteria2, server: a.example.com, port: 443, password: p}\n"
	start := time.Now()
	res, err := Parse([]byte(body))
	if err != nil || len(res.Nodes) != 1 {
		t.Fatalf("%v %v", res, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
}

func TestParse100MB(t *testing.T) {
	body := bytes.Repeat([]byte("hysteria2://a@b.example.com:443\n"), 100<<20/32)
	start := time.Now()
	if _, err := Parse(body); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
}

// TestRoundTrip writes parsed nodes back as links and a base64
// subscription, and reads them again.
func TestRoundTrip(t *testing.T) {
	var all []*node.Node
	for _, body := range []string{uriList, clashYAML, singBoxJSON, sip008JSON} {
		res, err := Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Nodes...)
	}
	var lines []string
	var kept []*node.Node
	for _, n := range all {
		s, err := link.Format(n)
		if err != nil {
			t.Logf("%s: no share link form: %v", n.Name, err)
			continue
		}
		lines = append(lines, s)
		kept = append(kept, n)
	}
	if len(kept) < len(all)*2/3 {
		t.Fatalf("only %d of %d nodes have a link form", len(kept), len(all))
	}
	body := base64.StdEncoding.EncodeToString([]byte(strings.Join(lines, "\n")))
	res, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != len(kept) || len(res.Warnings) != 0 {
		t.Fatalf("%d nodes, %v warnings; want %d", len(res.Nodes), res.Warnings, len(kept))
	}
	for i, n := range res.Nodes {
		if profile.NodeID("s", n) != profile.NodeID("s", kept[i]) || n.Name != kept[i].Name {
			t.Errorf("node %d %q changed identity in the round trip", i, kept[i].Name)
		}
	}
}

func TestSupported(t *testing.T) {
	hy := &node.Node{Protocol: node.Hysteria2, Server: "hy.example", Port: 443, Hysteria2: &node.Hysteria2Options{Auth: "a"}}
	vl := func(mod func(*node.Node)) *node.Node {
		n := &node.Node{Protocol: node.VLESS, Server: "vl.example", Port: 443, VLESS: &node.VLESSOptions{UUID: testUUID}}
		mod(n)
		return n
	}
	for _, tc := range []struct {
		n  *node.Node
		ok bool
	}{
		{hy, true},
		{vl(func(*node.Node) {}), true},
		{vl(func(n *node.Node) { n.TLS = &node.TLS{SNI: "x"}; n.Transport = &node.Transport{Type: node.TransportWS} }), true},
		{vl(func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportTCP} }), true},
		{vl(func(n *node.Node) { n.TLS = &node.TLS{Reality: &node.Reality{}} }), false},
		{vl(func(n *node.Node) { n.VLESS.Flow = "xtls-rprx-vision" }), false},
		{vl(func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportGRPC} }), true},
		{vl(func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportHTTPUpgrade} }), true},
		{vl(func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportTCP, HeaderType: "http"} }), false},
		{&node.Node{Protocol: node.Trojan, Server: "t.example", Port: 443, Trojan: &node.TrojanOptions{Password: "p"}}, true},
		{&node.Node{Protocol: node.Trojan, Server: "t.example", Port: 443, Trojan: &node.TrojanOptions{Password: "p"}, Transport: &node.Transport{Type: node.TransportGRPC}}, true},
		{&node.Node{Protocol: node.Trojan, Server: "t.example", Port: 443, Trojan: &node.TrojanOptions{Password: "p"}, Transport: &node.Transport{Type: "quic"}}, false},
		{&node.Node{Protocol: node.VMess, Server: "v.example", Port: 443, VMess: &node.VMessOptions{UUID: testUUID}, Transport: &node.Transport{Type: node.TransportWS}}, true},
		{&node.Node{Protocol: node.VMess, Server: "v.example", Port: 443, VMess: &node.VMessOptions{UUID: testUUID, AlterID: 64}}, false},
		{&node.Node{Protocol: "wireguard"}, false},
	} {
		ok, why := protocol.Supported(tc.n)
		if ok != tc.ok || (!ok && why == "") {
			t.Errorf("%s %+v: got %v %q", tc.n.Protocol, tc.n.Transport, ok, why)
		}
	}
}

func TestParseMbps(t *testing.T) {
	for in, want := range map[string]int{"": 0, "100": 100, "100 Mbps": 100, "1 Gbps": 1000, "500 Kbps": 1, "20 MB/s": 160, "1.5g": 1500} {
		got, err := parseMbps(in)
		if err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	if _, err := parseMbps("fast"); err == nil {
		t.Error("fast parsed")
	}
}

func nodeNames(r *Result) []string {
	var s []string
	for _, n := range r.Nodes {
		s = append(s, n.Name)
	}
	return s
}

func warnLines(r *Result) []int {
	var s []int
	for _, w := range r.Warnings {
		s = append(s, w.Line)
	}
	return s
}
