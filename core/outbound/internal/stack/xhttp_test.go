package stack

import (
	"errors"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/transport/xhttp"
)

func TestXHTTPConfig(t *testing.T) {
	reality := &node.Reality{PublicKey: realityPub, ShortID: "ab"}
	for _, tc := range []struct {
		name        string
		tls         *node.TLS
		tr          node.Transport
		mode        xhttp.Mode
		http        xhttp.Version
		host, path  string
		unsupported string // the Lack's value
	}{
		{name: "tls auto", tls: &node.TLS{SNI: "s.example"}, tr: node.Transport{Path: "/p"},
			mode: xhttp.PacketUp, http: xhttp.HTTP2, host: "s.example", path: "/p"},
		{name: "reality auto", tls: &node.TLS{SNI: "s.example", Reality: reality}, tr: node.Transport{},
			mode: xhttp.StreamOne, http: xhttp.HTTP2, host: "s.example"},
		{name: "link beats extra", tls: &node.TLS{}, tr: node.Transport{Host: "h", Path: "/l", XHTTP: &node.XHTTP{Mode: "stream-up", Extra: `{"host":"e","path":"/e","mode":"packet-up"}`}},
			mode: xhttp.StreamUp, http: xhttp.HTTP2, host: "h", path: "/l"},
		{name: "extra fills in", tls: &node.TLS{}, tr: node.Transport{XHTTP: &node.XHTTP{Extra: `{"host":"e","path":"/e","mode":"stream-one"}`}},
			mode: xhttp.StreamOne, http: xhttp.HTTP2, host: "e", path: "/e"},
		{name: "alpn http/1.1", tls: &node.TLS{ALPN: []string{"http/1.1"}}, tr: node.Transport{},
			mode: xhttp.PacketUp, http: xhttp.HTTP1, host: "x.example"},
		{name: "no tls", tr: node.Transport{}, mode: xhttp.PacketUp, http: xhttp.HTTP1, host: "x.example"},
		{name: "h3", tls: &node.TLS{ALPN: []string{"h3"}}, tr: node.Transport{XHTTP: &node.XHTTP{Mode: "stream-one"}},
			mode: xhttp.StreamOne, http: xhttp.HTTP3, host: "x.example"},
		{name: "stream-one without tls", tr: node.Transport{XHTTP: &node.XHTTP{Mode: "stream-one"}}, unsupported: "xhttp stream-one over HTTP/1.1"},
		{name: "download settings", tls: &node.TLS{}, tr: node.Transport{XHTTP: &node.XHTTP{Extra: `{"downloadSettings":{"address":"d"}}`}}, unsupported: "xhttp downloadSettings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.tr
			tr.Type = node.TransportXHTTP
			n := &node.Node{Protocol: node.VLESS, Server: "x.example", Port: 443, TLS: tc.tls, Transport: &tr}
			cfg, _, err := xhttpConfig("vless", n)
			if tc.unsupported != "" {
				var ue *node.UnsupportedError
				if !errors.As(err, &ue) || ue.Lack.Value != tc.unsupported {
					t.Fatalf("err = %v, want unsupported %q", err, tc.unsupported)
				}
				if _, err := New("vless", n, nil); !errors.As(err, &ue) {
					t.Fatalf("New: %v, want the same refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Mode != tc.mode || cfg.HTTP != tc.http || cfg.Host != tc.host || cfg.Path != tc.path {
				t.Fatalf("config %+v", cfg)
			}
			s, err := New("vless", n, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.xhttp == nil || s.xhttp.Mode() != tc.mode {
				t.Fatalf("stack has no XHTTP client of mode %s", tc.mode)
			}
		})
	}
}
