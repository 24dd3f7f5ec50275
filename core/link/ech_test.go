package link

import (
	"encoding/base64"
	"errors"
	"net/url"
	"reflect"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

// TestECHLinks: ech= in VLESS, Trojan and VMess links (URL and JSON
// forms) is kept on the node in each of its spellings and written back.
// Before, it was dropped, and the node connected with the name in clear.
func TestECHLinks(t *testing.T) {
	list := []byte{0, 8, 0xfe, 0x0d, 0, 4, 1, 2, 3, 4} // the framing of a list; tlsconf checks the rest
	b64 := base64.StdEncoding.EncodeToString(list)
	for _, tt := range []struct {
		name, ech string
		want      *node.ECH
	}{
		{"base64", b64, &node.ECH{Config: list}},
		{"base64url", base64.RawURLEncoding.EncodeToString(list), &node.ECH{Config: list}},
		{"doh", "https://1.1.1.1/dns-query", &node.ECH{DNS: "https://1.1.1.1/dns-query"}},
		{"name+doh", "cloudflare-ech.com+https://1.1.1.1/dns-query", &node.ECH{QueryServerName: "cloudflare-ech.com", DNS: "https://1.1.1.1/dns-query"}},
		{"flag", "1", &node.ECH{}},
		{"off", "0", nil},
	} {
		e := url.QueryEscape(tt.ech)
		for _, l := range []string{
			"vless://" + testUUID + "@v.example:443?security=tls&sni=real.example&ech=" + e + "#v",
			"trojan://pw@t.example:443?sni=real.example&ech=" + e + "#t",
			"vmess://" + testUUID + "@m.example:443?security=tls&sni=real.example&ech=" + e + "#m",
			vmessLink(base64.StdEncoding, `{"v":"2","ps":"j","add":"j.example","port":"443","id":"`+testUUID+`","net":"tcp","tls":"tls","sni":"real.example","ech":"`+tt.ech+`"}`),
		} {
			t.Run(tt.name, func(t *testing.T) {
				n, err := Parse(l)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(n.TLS.ECH, tt.want) {
					t.Fatalf("%s: ECH %+v, want %+v", l, n.TLS.ECH, tt.want)
				}
				out, err := Format(n)
				if tt.want != nil && tt.want.Config == nil && tt.want.DNS == "" {
					// The system's DNS has no form: refused, not dropped.
					var le *Error
					if !errors.As(err, &le) || le.Field != "ech" {
						t.Fatalf("Format = %q, %v; want an ech error", out, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				m, err := Parse(out)
				if err != nil {
					t.Fatalf("%s: %v", out, err)
				}
				if !reflect.DeepEqual(n, m) {
					t.Fatalf("round trip via %s:\n got %s\nwant %s", out, dump(m), dump(n))
				}
			})
		}
	}
	if _, err := Parse("vless://" + testUUID + "@v.example:443?security=tls&ech=!!not*base64!!#v"); err == nil {
		t.Error("bad ech: no error")
	}
	// Hysteria2 links keep it too (its outbound refuses the node).
	n, err := Parse("hysteria2://pw@h.example:443?ech=" + url.QueryEscape(b64) + "#h")
	if err != nil || n.TLS == nil || !reflect.DeepEqual(n.TLS.ECH, &node.ECH{Config: list}) {
		t.Fatalf("hysteria2: %+v, %v", n.TLS, err)
	}
}

// FuzzECHParam: whatever ech= value is accepted is written back as one
// that reads to the same settings (or refused when it has no link form).
func FuzzECHParam(f *testing.F) {
	for _, s := range []string{"AAj+DQAEAQIDBA==", "https://1.1.1.1/dns-query", "a.example+https://dns.example/q", "1", "0", "+https://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		e, err := echParam("vless", v)
		if err != nil || e == nil {
			return
		}
		out, err := echValue("vless", e)
		if err != nil {
			if e.Config != nil || e.DNS != "" {
				t.Fatalf("%q: %+v has a form but: %v", v, e, err)
			}
			return
		}
		back, err := echParam("vless", out)
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", v, e, out, back, err)
		}
	})
}
