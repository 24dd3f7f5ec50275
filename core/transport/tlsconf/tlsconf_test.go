package tlsconf

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

func TestNew(t *testing.T) {
	pin := strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		tls      *node.TLS
		server   string
		wantSNI  string
		wantALPN string
		insecure bool
		pinned   bool
		wantErr  bool
	}{
		{name: "defaults", server: "example.com", wantSNI: "example.com", wantALPN: "h3"},
		{name: "sni and alpn", tls: &node.TLS{SNI: "cdn.example", ALPN: []string{"http/1.1"}}, server: "1.2.3.4", wantSNI: "cdn.example", wantALPN: "http/1.1"},
		{name: "insecure only when asked", tls: &node.TLS{Insecure: true}, server: "a", wantSNI: "a", wantALPN: "h3", insecure: true},
		{name: "pin", tls: &node.TLS{PinSHA256: pin}, server: "a", wantSNI: "a", wantALPN: "h3", pinned: true},
		{name: "pin with colons", tls: &node.TLS{PinSHA256: strings.Repeat("AB:", 31) + "AB"}, server: "a", wantSNI: "a", wantALPN: "h3", pinned: true},
		{name: "bad pin", tls: &node.TLS{PinSHA256: "xyz"}, server: "a", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.tls, tt.server, "h3")
			if tt.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ServerName != tt.wantSNI || c.NextProtos[0] != tt.wantALPN || c.InsecureSkipVerify != tt.insecure || (c.VerifyConnection != nil) != tt.pinned {
				t.Errorf("got sni=%q alpn=%v insecure=%v pinned=%v", c.ServerName, c.NextProtos, c.InsecureSkipVerify, c.VerifyConnection != nil)
			}
		})
	}
}
