package stack

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

func TestWSHost(t *testing.T) {
	tests := []struct {
		server string
		tlsOpt *node.TLS
		tr     node.Transport
		want   string
	}{
		{"1.2.3.4", nil, node.Transport{}, "1.2.3.4"},
		{"2001:db8::1", nil, node.Transport{}, "[2001:db8::1]"},
		{"1.2.3.4", &node.TLS{SNI: "sni.example"}, node.Transport{}, "sni.example"},
		{"1.2.3.4", &node.TLS{SNI: "sni.example"}, node.Transport{Headers: map[string]string{"host": "hdr.example"}}, "hdr.example"},
		{"1.2.3.4", &node.TLS{SNI: "sni.example"}, node.Transport{Host: "host.example", Headers: map[string]string{"Host": "hdr.example"}}, "host.example"},
	}
	for _, tt := range tests {
		tt.tr.Type = "ws"
		n := &node.Node{Server: tt.server, Port: 443, TLS: tt.tlsOpt, Transport: &tt.tr}
		cfg, err := WSConfig(n)
		if err != nil || cfg.Host != tt.want {
			t.Errorf("%s %+v: host %q, %v; want %q", tt.server, tt.tr, cfg.Host, err, tt.want)
		}
	}
}

// realityPub is an X25519 public key in the form links carry.
const realityPub = "jNXHt1yRo0vDuchQlIP6Z0ZvjT3KtzVI-T4E7RoLJS0"

func TestNew(t *testing.T) {
	base := func() *node.Node {
		return &node.Node{Server: "s.example", Port: 443, TLS: &node.TLS{}}
	}
	for _, tc := range []struct {
		name string
		mod  func(*node.Node)
		want string // "": success
	}{
		{"tls", func(*node.Node) {}, ""},
		{"plain", func(n *node.Node) { n.TLS = nil }, ""},
		{"raw", func(n *node.Node) { n.Transport = &node.Transport{Type: "raw"} }, ""},
		{"ws", func(n *node.Node) { n.Transport = &node.Transport{Type: "ws", Path: "/x?ed=2560"} }, ""},
		{"grpc", func(n *node.Node) { n.Transport = &node.Transport{Type: "grpc", ServiceName: "gun", MultiMode: true} }, ""},
		{"grpc without tls", func(n *node.Node) { n.TLS = nil; n.Transport = &node.Transport{Type: "grpc"} }, ""},
		{"grpc over reality", func(n *node.Node) {
			n.TLS.Reality = &node.Reality{PublicKey: realityPub}
			n.Transport = &node.Transport{Type: "grpc"}
		}, ""},
		{"httpupgrade", func(n *node.Node) { n.Transport = &node.Transport{Type: "httpupgrade", Path: "/up"} }, ""},
		{"httpupgrade over reality", func(n *node.Node) {
			n.TLS.Reality = &node.Reality{PublicKey: realityPub}
			n.Transport = &node.Transport{Type: "httpupgrade"}
		}, "REALITY over httpupgrade"},
		{"unknown transport", func(n *node.Node) { n.Transport = &node.Transport{Type: "quic"} }, `p: s.example:443: transport "quic" is not supported yet`},
		{"http header", func(n *node.Node) { n.Transport = &node.Transport{Type: "tcp", HeaderType: "http"} }, `tcp header type "http"`},
		{"reality", func(n *node.Node) { n.TLS.Reality = &node.Reality{PublicKey: realityPub, ShortID: "ab"} }, ""},
		{"reality bad key", func(n *node.Node) { n.TLS.Reality = &node.Reality{PublicKey: "k"} }, "reality: public key"},
		{"reality over ws", func(n *node.Node) {
			n.TLS.Reality = &node.Reality{PublicKey: realityPub}
			n.Transport = &node.Transport{Type: "ws"}
		}, "REALITY over ws"},
		{"fingerprint", func(n *node.Node) { n.TLS.Fingerprint = "firefox" }, ""},
		{"unknown fingerprint", func(n *node.Node) { n.TLS.Fingerprint = "netscape" }, `fp "netscape": unknown TLS fingerprint`},
		{"multiplex", func(n *node.Node) { n.Multiplex = "smux" }, `multiplex "smux" is not supported yet`},
		{"bad ed", func(n *node.Node) { n.Transport = &node.Transport{Type: "ws", Path: "/x?ed=lots"} }, "bad ed"},
		{"bad pin", func(n *node.Node) { n.TLS.PinSHA256 = "12" }, "pinSHA256"},
		{"h2", func(n *node.Node) { n.Transport = &node.Transport{Type: "h2", Path: "/h"} }, ""},
		{"h2 without tls", func(n *node.Node) { n.TLS = nil; n.Transport = &node.Transport{Type: "h2"} }, "transport h2 without TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.mod(n)
			s, err := New("p", n, nil)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("New: %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.TLS() != (n.TLS != nil) {
				t.Errorf("TLS layer %v", s.TLS())
			}
			if tc.name == "ws" && (s.tls.NextProtos()[0] != "http/1.1" || s.ws.MaxEarlyData != 2560 || s.ws.Path != "/x") {
				t.Fatalf("ws: alpn %v, %+v", s.tls.NextProtos(), s.ws)
			}
			if tc.name == "h2" && (s.tls.NextProtos()[0] != "h2" || s.h2 == nil || s.h2.Host() != "s.example") {
				t.Fatalf("h2: alpn %v", s.tls.NextProtos())
			}
			s.Close()
		})
	}
}

// A gRPC node's TLS server must choose h2: one that chooses nothing (a
// site that is no gRPC server) is named, not spoken to.
func TestGRPCNeedsH2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{NextProtos: []string{}}
	srv.StartTLS()
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	n := &node.Node{Server: host, Port: uint16(p), TLS: &node.TLS{Insecure: true}, Transport: &node.Transport{Type: "grpc", ServiceName: "gun"}}
	s, err := New("p", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.Dial(ctx)
	if err == nil || !strings.Contains(err.Error(), `server did not choose h2 (ALPN "")`) {
		t.Fatalf("Dial: %v, want the ALPN named", err)
	}
}
