package subscription

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

const (
	hysteriaClash = `proxies:
  - {name: h, type: hysteria, server: h.example.com, port: 443, auth-str: secret, obfs: xkey, alpn: [hysteria], protocol: udp, up: '30 Mbps', down: 200, sni: s.example.com, skip-cert-verify: true, recv-window-conn: 12582912, recv-window: 52428800, disable_mtu_discovery: true}
  - {name: b, type: hysteria, server: b.example.com, ports: '2000-3000', auth: AAEC/w==, up: 10, down: 10}
  - {name: f, type: hysteria, server: f.example.com, port: 443, auth-str: x, obfs-protocol: faketcp, up: 10, down: 10}
  - {name: n, type: hysteria, server: n.example.com, port: 443, auth-str: x}
`
	hysteriaSingBox = `{"outbounds": [
  {"type": "hysteria", "tag": "h", "server": "h.example.com", "server_port": 443, "auth_str": "secret", "obfs": "xkey", "up": "30 Mbps", "down_mbps": 200, "recv_window_conn": 12582912, "recv_window": 52428800, "disable_mtu_discovery": true, "tls": {"enabled": true, "server_name": "s.example.com", "insecure": true, "alpn": "hysteria"}},
  {"type": "hysteria", "tag": "b", "server": "b.example.com", "server_ports": ["2000:3000"], "auth": "AAEC/w==", "up_mbps": 10, "down_mbps": 10, "tls": {"enabled": true}},
  {"type": "hysteria2", "tag": "v2", "server": "v2.example.com", "server_port": 443, "password": "p", "obfs": {"type": "salamander", "password": "o"}, "tls": {"enabled": true}},
  {"type": "hysteria", "tag": "n", "server": "n.example.com", "server_port": 443, "auth_str": "x", "tls": {"enabled": true}}
]}`
)

// TestHysteriaFields: Clash's and sing-box's Hysteria v1 proxies reach the
// node with every field (auth as text and as base64, the xplus key, rates
// with units, windows, TLS), a Hysteria 2 obfs object still reads, and
// what Skiff cannot dial (faketcp, no rates) is kept and greyed with the
// reason.
func TestHysteriaFields(t *testing.T) {
	want := &node.HysteriaOptions{Auth: []byte("secret"), UpMbps: 30, DownMbps: 200, Obfs: "xkey",
		RecvWindowConn: 12582912, RecvWindow: 52428800, DisableMTUDiscovery: true}
	wantTLS := &node.TLS{SNI: "s.example.com", ALPN: []string{"hysteria"}, Insecure: true}
	wantB := &node.HysteriaOptions{Auth: []byte{0, 1, 2, 0xff}, UpMbps: 10, DownMbps: 10}
	for name, doc := range map[string]string{"clash": hysteriaClash, "sing-box": hysteriaSingBox} {
		res, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Nodes) != 4 {
			t.Fatalf("%s: %d nodes (%v)", name, len(res.Nodes), res.Warnings)
		}
		h, b := res.Nodes[0], res.Nodes[1]
		if h.Protocol != node.Hysteria || !reflect.DeepEqual(h.Hysteria, want) {
			t.Errorf("%s: %s %+v, want %+v", name, h.Protocol, h.Hysteria, want)
		}
		if !reflect.DeepEqual(h.TLS, wantTLS) {
			t.Errorf("%s: tls %+v, want %+v", name, h.TLS, wantTLS)
		}
		if !reflect.DeepEqual(b.Hysteria, wantB) || b.Port != 2000 {
			t.Errorf("%s: port %d %+v, want 2000 %+v", name, b.Port, b.Hysteria, wantB)
		}
		for _, n := range res.Nodes[:2] {
			if ok, why := protocol.Supported(n); !ok {
				t.Errorf("%s: %s not supported: %s", name, n.Name, why)
			}
		}
		if ok, why := protocol.Supported(res.Nodes[3]); ok || !strings.Contains(why, "Mbps") {
			t.Errorf("%s: node without rates: supported %v %q", name, ok, why)
		}
		if name == "clash" {
			if ok, why := protocol.Supported(res.Nodes[2]); ok || !strings.Contains(why, "faketcp") {
				t.Errorf("faketcp node: supported %v %q", ok, why)
			}
		} else if v2 := res.Nodes[2].Hysteria2; v2 == nil || v2.Obfs != "salamander" || v2.ObfsPassword != "o" {
			t.Errorf("sing-box hysteria2 obfs: %+v", v2)
		}
	}
}

func TestHysteriaRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"clash bad base64":     "proxies:\n  - {name: x, type: hysteria, server: a, port: 1, auth: '%%%', up: 1, down: 1}\n",
		"clash bad protocol":   "proxies:\n  - {name: x, type: hysteria, server: a, port: 1, protocol: quic, up: 1, down: 1}\n",
		"sing-box bad obfs":    `{"outbounds":[{"type":"hysteria","tag":"x","server":"a","server_port":1,"obfs":7}]}`,
		"sing-box bad up unit": `{"outbounds":[{"type":"hysteria","tag":"x","server":"a","server_port":1,"up":"fast","down_mbps":1}]}`,
	} {
		res, err := Parse([]byte(doc))
		if err == nil && len(res.Nodes) != 0 {
			t.Errorf("%s: imported %+v", name, res.Nodes[0].Hysteria)
		}
	}
}

func FuzzClashHysteria(f *testing.F) {
	f.Add([]byte(hysteriaClash))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := detectYAML(b)
		if err != nil || d.format != FormatClash {
			return
		}
		res := &Result{Format: FormatClash}
		if parseClash(d.yaml, res) == nil {
			checkResult(t, res, nil)
		}
	})
}

func FuzzSingBoxHysteria(f *testing.F) {
	f.Add([]byte(hysteriaSingBox))
	f.Fuzz(func(t *testing.T, b []byte) {
		res := &Result{Format: FormatSingBox}
		if parseSingBox(b, res) == nil {
			checkResult(t, res, nil)
		}
	})
}

// TestSingBoxShortForms: the sing-box fields written short or in full
// (a list, udp_over_tcp, obfs) decode to the same value, and anything else
// is the field's own error.
func TestSingBoxShortForms(t *testing.T) {
	decoded := map[string]any{}
	for in, into := range map[string]any{
		`"h3"`: new(listable), `["h3","h2"]`: new(listable), `3`: new(listable),
		`true`: new(sbUoT), `{"enabled":true,"version":2}`: new(sbUoT), `"yes"`: new(sbUoT),
		`"key"`: new(sbObfs), `{"type":"salamander","password":"pw"}`: new(sbObfs), `[1]`: new(sbObfs),
	} {
		if err := json.Unmarshal([]byte(in), into); err != nil {
			decoded[in] = err.Error()
		} else {
			decoded[in] = into
		}
	}
	want := map[string]any{
		`"h3"`: &listable{"h3"}, `["h3","h2"]`: &listable{"h3", "h2"}, `3`: "want a string or a list of strings",
		`true`: &sbUoT{Enabled: true}, `{"enabled":true,"version":2}`: &sbUoT{Enabled: true, Version: 2},
		`"yes"`: `udp_over_tcp: want true/false or {"enabled": …, "version": …}`,
		`"key"`: &sbObfs{Type: "xplus", Password: "key"}, `{"type":"salamander","password":"pw"}`: &sbObfs{Type: "salamander", Password: "pw"},
		`[1]`: `obfs: want a key or {"type": …, "password": …}`,
	}
	if !reflect.DeepEqual(decoded, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", decoded, want)
	}
}
