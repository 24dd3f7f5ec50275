package shadowsocks

import (
	"errors"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

// TestShadowTLSOptions: the shadow-tls plugin's options as mihomo means
// them (fingerprint a certificate pin, client-fingerprint the
// ClientHello's), and bad ones refused with their name.
func TestShadowTLSOptions(t *testing.T) {
	const pin = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	for _, tc := range []struct {
		opts, err string
	}{
		{"host=a.example;password=p;version=3", ""},
		{"host=a.example;password=p", ""}, // v2, mihomo's default
		{"host=a.example;version=1", ""},  // v1 has no password
		{"host=a.example;password=p;version=3;client-fingerprint=firefox;alpn=h2,http/1.1;skip-cert-verify", ""},
		{"host=a.example;password=p;fingerprint=" + pin, ""},
		{"host=a.example;password=p;fingerprint=chrome", "goes in client-fingerprint"},
		{"host=a.example;password=p;client-fingerprint=netscape", "netscape"},
		{"host=a.example;password=p;version=4", "want 1, 2 or 3"},
		{"host=a.example;password=p;version=three", "version: not a number"},
		{"host=a.example;version=3", "password: empty"},
		{"password=p;version=3", "host: empty"},
		{"host=a.example;password=p;strict", `option "strict" is not supported`},
	} {
		n := &node.Node{Name: "n", Protocol: node.Shadowsocks, Server: "203.0.113.7", Port: 443,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "x", Plugin: "shadow-tls", PluginOpts: tc.opts}}
		_, err := New(n, nil)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.opts, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.opts, err, tc.err)
		}
		if tc.opts == "host=a.example;password=p;strict" {
			var u *node.UnsupportedError
			if !errors.As(err, &u) {
				t.Errorf("an unknown option is not greyed as unsupported: %T", err)
			}
		}
	}
}
