package link

import (
	"encoding/base64"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

// XHTTP links as panels write them parse to the transport and go out
// again to the same node.
func TestXHTTPLinks(t *testing.T) {
	extra := `{"xPaddingBytes":"200-400","noGRPCHeader":true,"xmux":{"maxConnections":2}}`
	vmessJSON := `{"v":"2","ps":"vm","add":"v.example","port":"443","id":"` + testUUID + `","aid":"0","net":"xhttp","type":"stream-up","host":"cdn.example","path":"/x","tls":"tls","extra":` + quoteJSON(extra) + `}`
	for _, tc := range []struct {
		name, link string
		want       node.Transport
	}{
		{"vless reality stream-one", "vless://" + testUUID + "@r.example:443?security=reality&sni=www.example&pbk=" + testPBK + "&sid=ab&type=xhttp&path=%2Fxh&mode=stream-one#r",
			node.Transport{Type: node.TransportXHTTP, Path: "/xh", XHTTP: &node.XHTTP{Mode: "stream-one"}}},
		{"vless tls extra", "vless://" + testUUID + "@t.example:443?security=tls&sni=t.example&type=xhttp&host=cdn.example&path=%2Fp&mode=packet-up&extra=" + url.QueryEscape(extra) + "#t",
			node.Transport{Type: node.TransportXHTTP, Host: "cdn.example", Path: "/p", XHTTP: &node.XHTTP{Mode: "packet-up", Extra: extra}}},
		{"splithttp alias, no mode", "vless://" + testUUID + "@s.example:443?security=tls&type=splithttp&path=%2Fs#s",
			node.Transport{Type: node.TransportXHTTP, Path: "/s"}},
		{"trojan", "trojan://pw@t.example:443?security=tls&type=xhttp&path=%2Ft&mode=auto#t",
			node.Transport{Type: node.TransportXHTTP, Path: "/t", XHTTP: &node.XHTTP{Mode: "auto"}}},
		{"vmess json", "vmess://" + base64.StdEncoding.EncodeToString([]byte(vmessJSON)),
			node.Transport{Type: node.TransportXHTTP, Host: "cdn.example", Path: "/x", XHTTP: &node.XHTTP{Mode: "stream-up", Extra: extra}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.link)
			if err != nil {
				t.Fatal(err)
			}
			if n.Transport == nil || !reflect.DeepEqual(*n.Transport, tc.want) {
				t.Fatalf("transport = %+v, want %+v", n.Transport, tc.want)
			}
			out, err := Format(n)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse(Format) %q: %v", out, err)
			}
			if !reflect.DeepEqual(back, n) {
				t.Fatalf("round trip through %q:\n got %+v\nwant %+v", out, back, n)
			}
		})
	}
}

func TestXHTTPLinkRefusals(t *testing.T) {
	for _, l := range []string{
		"vless://" + testUUID + "@t.example:443?security=tls&type=xhttp&mode=stream-sideways",
		"vless://" + testUUID + "@t.example:443?security=tls&type=xhttp&extra=%5B1%5D",
		"vless://" + testUUID + "@t.example:443?security=tls&type=xhttp&extra=%7Bnope",
		"vless://" + testUUID + "@t.example:443?security=tls&type=xhttp&extra=null",
	} {
		if n, err := Parse(l); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", l, n.Transport)
		} else if !strings.Contains(err.Error(), "mode") && !strings.Contains(err.Error(), "extra") {
			t.Errorf("Parse(%q): %v: does not name the field", l, err)
		}
	}
}

func quoteJSON(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// FuzzXHTTPLink is FuzzParse seeded with XHTTP links, whose extra= JSON
// FuzzParse rarely builds on its own.
func FuzzXHTTPLink(f *testing.F) {
	f.Add("vless://" + testUUID + "@t.example:443?security=tls&type=xhttp&host=h&path=%2Fp&mode=packet-up&extra=%7B%22xPaddingBytes%22%3A%22200-400%22%7D#t")
	f.Add("vless://" + testUUID + "@t.example:443?security=tls&type=splithttp&mode=stream-one&extra=%7B%7D")
	f.Fuzz(checkRoundTrip)
}
