package subscription

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"golang.org/x/crypto/cryptobyte"

	"github.com/skiffvpn/skiff/core/node"
)

// testECHList is an ECHConfigList for public.example (X25519 key of
// 0x11 bytes, HKDF-SHA256, AES-128-GCM).
func testECHList() []byte {
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint16(0xfe0d)
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			b.AddUint8(1)
			b.AddUint16(0x20)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(bytes.Repeat([]byte{0x11}, 32)) })
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint16(1); b.AddUint16(1) })
			b.AddUint8(0)
			b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte("public.example")) })
			b.AddUint16(0)
		})
	})
	return b.BytesOrPanic()
}

// TestECHImport: Clash ech-opts and sing-box tls.ech become the node's
// ECH; a node with a config is usable, one that needs DNS or a
// fingerprint without ECH is greyed with the reason, never imported as a
// usable node without ECH (before, both were dropped and the node
// connected with its name in clear).
func TestECHImport(t *testing.T) {
	list := testECHList()
	b64 := base64.StdEncoding.EncodeToString(list)
	pemLines := strings.Split(strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "ECH CONFIGS", Bytes: list}))), "\n")
	quoted := `"` + strings.Join(pemLines, `","`) + `"`
	hasConfig := func(n *node.Node) bool {
		return n.TLS != nil && n.TLS.ECH != nil && bytes.Equal(n.TLS.ECH.Config, list)
	}
	for _, tc := range []struct {
		name, doc string
		check     func(*node.Node) bool
		reason    string
	}{
		{"clash vless", `proxies:
  - {name: a, type: vless, server: v.example, port: 443, uuid: ` + testUUID + `, tls: true, servername: real.example,
     ech-opts: {enable: true, config: "` + b64 + `"}}`, hasConfig, ""},
		{"clash trojan chrome", `proxies:
  - {name: a, type: trojan, server: t.example, port: 443, password: pw, sni: real.example, client-fingerprint: chrome,
     ech-opts: {enable: true, config: "` + b64 + `"}}`, hasConfig, ""},
		{"clash trojan safari", `proxies:
  - {name: a, type: trojan, server: t.example, port: 443, password: pw, sni: real.example, client-fingerprint: safari,
     ech-opts: {enable: true, config: "` + b64 + `"}}`, hasConfig, "no ECH extension"},
		{"clash dns", `proxies:
  - {name: a, type: vmess, server: m.example, port: 443, uuid: ` + testUUID + `, cipher: auto, tls: true, servername: real.example,
     ech-opts: {enable: true, query-server-name: ech.example}}`,
			func(n *node.Node) bool { return n.TLS.ECH != nil && n.TLS.ECH.QueryServerName == "ech.example" }, "DNS HTTPS records"},
		{"clash hysteria2", `proxies:
  - {name: a, type: hysteria2, server: h.example, port: 443, password: pw, sni: real.example,
     ech-opts: {enable: true, config: "` + b64 + `"}}`, hasConfig, "ECH is not supported with this protocol"},
		{"clash disabled", `proxies:
  - {name: a, type: vless, server: v.example, port: 443, uuid: ` + testUUID + `, tls: true, ech-opts: {enable: false, config: "` + b64 + `"}}`,
			func(n *node.Node) bool { return n.TLS.ECH == nil }, ""},
		{"sing-box vless", `{"outbounds":[{"type":"vless","tag":"a","server":"v.example","server_port":443,"uuid":"` + testUUID + `",
     "tls":{"enabled":true,"server_name":"real.example","ech":{"enabled":true,"config":[` + quoted + `]}}}]}`, hasConfig, ""},
		{"sing-box one string", `{"outbounds":[{"type":"trojan","tag":"a","server":"t.example","server_port":443,"password":"pw",
     "tls":{"enabled":true,"server_name":"real.example","ech":{"enabled":true,"config":"` + strings.Join(pemLines, `\n`) + `"}}}]}`, hasConfig, ""},
		{"sing-box dns", `{"outbounds":[{"type":"vmess","tag":"a","server":"m.example","server_port":443,"uuid":"` + testUUID + `",
     "tls":{"enabled":true,"server_name":"real.example","ech":{"enabled":true}}}]}`,
			func(n *node.Node) bool { return n.TLS.ECH != nil && n.TLS.ECH.Config == nil }, "DNS HTTPS records"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFieldCase(t, tc.doc, tc.check, tc.reason) })
	}
	// A malformed config is an entry skipped with a warning, not a node
	// without ECH.
	for _, doc := range []string{
		`proxies:
  - {name: a, type: vless, server: v.example, port: 443, uuid: ` + testUUID + `, tls: true, ech-opts: {enable: true, config: "!!"}}`,
		`{"outbounds":[{"type":"vless","tag":"a","server":"v.example","server_port":443,"uuid":"` + testUUID + `",
     "tls":{"enabled":true,"ech":{"enabled":true,"config":["not pem"]}}}]}`,
		`{"outbounds":[{"type":"vless","tag":"a","server":"v.example","server_port":443,"uuid":"` + testUUID + `",
     "tls":{"enabled":true,"ech":{"enabled":true,"config_path":"/etc/ech.pem"}}}]}`,
	} {
		res, _ := Parse([]byte(doc))
		if res != nil && len(res.Nodes) > 0 {
			t.Errorf("malformed ECH imported: %+v", res.Nodes[0].TLS)
		}
	}
}
