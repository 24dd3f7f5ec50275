package subscription

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

// The Trojan and VMess fields of the Clash and sing-box formats, and
// whether the node they make can be dialed (and if not, the reason names
// the option).
var streamFieldCases = []struct {
	name   string
	doc    string
	check  func(*node.Node) bool
	reason string // "": supported
}{
	{"clash vmess ws", `proxies:
  - {name: a, type: vmess, server: v.example, port: 443, uuid: ` + testUUID + `, alterId: 0, cipher: aes-128-gcm,
     tls: true, servername: sni.example, skip-cert-verify: true, network: ws,
     ws-opts: {path: "/vm?ed=2048", headers: {Host: cdn.example}}, global-padding: true}`,
		func(n *node.Node) bool {
			return n.VMess.Security == "aes-128-gcm" && n.VMess.GlobalPadding && n.TLS.SNI == "sni.example" && n.TLS.Insecure &&
				n.Transport.Type == node.TransportWS && n.Transport.Path == "/vm" && n.Transport.MaxEarlyData == 2048 && n.Transport.Host == "cdn.example"
		}, ""},
	{"clash vmess legacy", `proxies:
  - {name: a, type: vmess, server: v.example, port: 443, uuid: ` + testUUID + `, alterId: 64, cipher: auto}`,
		func(n *node.Node) bool { return n.VMess.AlterID == 64 }, "alterId 64 is legacy VMess"},
	{"clash vmess auth length", `proxies:
  - {name: a, type: vmess, server: v.example, port: 443, uuid: ` + testUUID + `, cipher: auto, authenticated-length: true}`,
		func(n *node.Node) bool { return n.VMess.AuthenticatedLength }, "authenticated length"},
	{"clash vmess xudp", `proxies:
  - {name: a, type: vmess, server: v.example, port: 443, uuid: ` + testUUID + `, cipher: auto, packet-encoding: xudp}`,
		func(n *node.Node) bool { return n.VMess.PacketEncoding == "xudp" }, `packet encoding "xudp"`},
	{"clash vmess h2", `proxies:
  - {name: a, type: vmess, server: v.example, port: 443, uuid: ` + testUUID + `, cipher: auto, tls: true, network: h2,
     h2-opts: {host: [h.example], path: /h2}}`,
		func(n *node.Node) bool {
			return n.Transport.Type == node.TransportH2 && n.Transport.Host == "h.example" && n.Transport.Path == "/h2"
		}, ""},
	{"clash vmess h2 without tls", `proxies:
  - {name: a, type: vmess, server: v.example, port: 443, uuid: ` + testUUID + `, cipher: auto, network: h2}`,
		func(n *node.Node) bool { return n.Transport.Type == node.TransportH2 }, "h2 without TLS"},
	{"clash vmess http header", `proxies:
  - {name: a, type: vmess, server: v.example, port: 80, uuid: ` + testUUID + `, cipher: auto, network: http,
     http-opts: {path: [/p], headers: {Host: [h.example]}}}`,
		func(n *node.Node) bool {
			return n.Transport.Type == node.TransportTCP && n.Transport.HeaderType == "http" && n.Transport.Path == "/p" && n.Transport.Host == "h.example"
		}, `tcp header type "http"`},
	{"sing-box vmess http without tls", `{"outbounds":[{"type":"vmess","tag":"a","server":"v.example","server_port":80,"uuid":"` + testUUID + `",
		"transport":{"type":"http","path":"/p"}}]}`,
		func(n *node.Node) bool { return n.Transport.HeaderType == "http" && n.Transport.Path == "/p" }, `tcp header type "http"`},
	{"clash trojan ws", `proxies:
  - {name: a, type: trojan, server: t.example, port: 443, password: pw, sni: sni.example, alpn: [http/1.1],
     network: ws, ws-opts: {path: /tr}}`,
		func(n *node.Node) bool {
			return n.Trojan.Password == "pw" && n.TLS.SNI == "sni.example" && n.Transport.Path == "/tr"
		}, ""},
	{"clash trojan smux", `proxies:
  - {name: a, type: trojan, server: t.example, port: 443, password: pw, smux: {enabled: true, protocol: smux, max-streams: 8, padding: true}}`,
		func(n *node.Node) bool {
			return n.Multiplex == "smux" && *n.MultiplexOptions == node.MultiplexOptions{MaxStreams: 8, Padding: true}
		}, ""},
	{"clash vless smux vision", `proxies:
  - {name: a, type: vless, server: t.example, port: 443, uuid: ` + testUUID + `, tls: true, flow: xtls-rprx-vision, smux: {enabled: true}}`,
		func(n *node.Node) bool { return n.Multiplex == "h2mux" }, "multiplex cannot go with flow"},
	{"clash trojan ss-opts", `proxies:
  - {name: a, type: trojan, server: t.example, port: 443, password: pw, ss-opts: {enabled: true, method: chacha20-ietf-poly1305, password: x}}`,
		func(n *node.Node) bool { return n.Trojan.SSMethod == "chacha20-ietf-poly1305" }, "shadowsocks layer"},
	{"sing-box vmess", `{"outbounds":[{"type":"vmess","tag":"a","server":"v.example","server_port":443,"uuid":"` + testUUID + `",
			"security":"chacha20-poly1305","alter_id":0,"global_padding":true,
			"tls":{"enabled":true,"server_name":"sni.example"},"transport":{"type":"ws","path":"/vm","headers":{"Host":"cdn.example"}}}]}`,
		func(n *node.Node) bool {
			return n.VMess.Security == "chacha20-poly1305" && n.VMess.GlobalPadding && n.TLS.SNI == "sni.example" && n.Transport.Host == "cdn.example"
		}, ""},
	{"sing-box vmess packetaddr", `{"outbounds":[{"type":"vmess","tag":"a","server":"v.example","server_port":443,"uuid":"` + testUUID + `",
			"packet_encoding":"packetaddr","authenticated_length":false}]}`,
		func(n *node.Node) bool { return n.VMess.PacketEncoding == "packetaddr" }, `packet encoding "packetaddr"`},
	{"sing-box trojan multiplex", `{"outbounds":[{"type":"trojan","tag":"a","server":"t.example","server_port":443,"password":"pw",
			"tls":{"enabled":true},"multiplex":{"enabled":true,"max_connections":2,"min_streams":3}}]}`,
		func(n *node.Node) bool {
			return n.Multiplex == "h2mux" && *n.MultiplexOptions == node.MultiplexOptions{MaxConnections: 2, MinStreams: 3}
		}, ""},
	{"sing-box vmess yamux conflict", `{"outbounds":[{"type":"vmess","tag":"a","server":"t.example","server_port":443,"uuid":"` + testUUID + `",
			"multiplex":{"enabled":true,"protocol":"yamux","max_connections":2,"max_streams":3}}]}`,
		func(n *node.Node) bool { return n.Multiplex == "yamux" }, "max_streams conflicts"},
	{"sing-box shadowsocks multiplex", `{"outbounds":[{"type":"shadowsocks","tag":"a","server":"s.example","server_port":443,"method":"2022-blake3-aes-128-gcm",
			"password":"AAAAAAAAAAAAAAAAAAAAAA==","multiplex":{"enabled":true,"protocol":"smux"}}]}`,
		func(n *node.Node) bool { return n.Multiplex == "smux" }, `multiplex "smux" is not supported with shadowsocks`},
	{"sing-box mux unknown", `{"outbounds":[{"type":"vmess","tag":"a","server":"t.example","server_port":443,"uuid":"` + testUUID + `",
			"multiplex":{"enabled":true,"protocol":"mplex"}}]}`,
		func(n *node.Node) bool { return n.Multiplex == "mplex" }, `multiplex "mplex"`},
	{"sing-box trojan", `{"outbounds":[{"type":"trojan","tag":"a","server":"t.example","server_port":443,"password":"pw",
			"tls":{"enabled":true,"server_name":"sni.example","insecure":true},"multiplex":{"enabled":false}}]}`,
		func(n *node.Node) bool { return n.TLS.Insecure && n.Multiplex == "" }, ""},
}

func TestTrojanVMessFields(t *testing.T) {
	for _, tc := range streamFieldCases {
		t.Run(tc.name, func(t *testing.T) { checkFieldCase(t, tc.doc, tc.check, tc.reason) })
	}
}

// checkFieldCase parses doc, which holds one node, checks it and whether
// it is supported: reason "" wants it usable, else greyed with a reason
// that contains reason.
func checkFieldCase(t *testing.T, doc string, check func(*node.Node) bool, reason string) {
	t.Helper()
	res, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 1 {
		t.Fatalf("%d nodes, warnings %v", len(res.Nodes), res.Warnings)
	}
	n := res.Nodes[0]
	if !check(n) {
		t.Errorf("node %+v (vmess %+v, trojan %+v, transport %+v, tls %+v)", n, n.VMess, n.Trojan, n.Transport, n.TLS)
	}
	ok, why := protocol.Supported(n)
	switch {
	case reason == "" && !ok:
		t.Errorf("not supported: %s", why)
	case reason != "" && (ok || !strings.Contains(why, reason)):
		t.Errorf("supported %v %q; want greyed with %q", ok, why, reason)
	}
}

// FuzzStreamFields parses documents seeded with the Trojan and VMess
// fields of every format: whatever it accepts is a valid node, and the
// reason a node is greyed never shows its credentials.
func FuzzStreamFields(f *testing.F) {
	for _, tc := range streamFieldCases {
		f.Add([]byte(tc.doc))
	}
	f.Add([]byte("vmess://eyJ2IjoiMiIsImFkZCI6ImEiLCJwb3J0IjoiMSIsImlkIjoiYjgzMTM4MWQtNjMyNC00ZDUzLWFkNGYtOGNkYTQ4YjMwODExIiwiYWlkIjoiMCIsInNjeSI6Im5vbmUiLCJuZXQiOiJ3cyJ9\ntrojan://pw@a:1?type=ws&path=%2Fx#t\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := Parse(b)
		checkResult(t, res, err)
		if res == nil {
			return
		}
		for _, n := range res.Nodes {
			ok, why := protocol.Supported(n)
			if ok {
				continue
			}
			for _, secret := range []string{secretOf(n)} {
				if len(secret) >= 8 && strings.Contains(why, secret) {
					t.Fatalf("reason %q shows the credential", why)
				}
			}
		}
	})
}

func secretOf(n *node.Node) string {
	switch {
	case n.Trojan != nil:
		return n.Trojan.Password
	case n.VMess != nil:
		return n.VMess.UUID
	}
	return ""
}
