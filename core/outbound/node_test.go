package outbound

import (
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

func TestNodeAddress(t *testing.T) {
	for _, tt := range []struct {
		name    string
		n       *node.Node
		want    string
		wantErr string
	}{
		{"nil node", nil, "", "vless: node has no VLESS options"},
		{"no options", &node.Node{Server: "a.example", Port: 443}, "", "vless: node has no VLESS options"},
		{"no server", &node.Node{Port: 443, VLESS: &node.VLESSOptions{}}, "", "vless: node has no server address"},
		{"no port", &node.Node{Server: "a.example", VLESS: &node.VLESSOptions{}}, "", "vless: node has no server address"},
		{"ok", &node.Node{Server: "a.example", Port: 443, VLESS: &node.VLESSOptions{}}, "a.example:443", ""},
		{"ipv6", &node.Node{Server: "2001:db8::1", Port: 8443, VLESS: &node.VLESSOptions{}}, "[2001:db8::1]:8443", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NodeAddress(tt.n, tt.n != nil && tt.n.VLESS != nil, "vless", "VLESS")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NodeAddress = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
