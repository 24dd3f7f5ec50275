package node

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	hy := func() *Node {
		return &Node{Name: "n", Protocol: Hysteria2, Server: "example.com", Port: 443, Hysteria2: &Hysteria2Options{Auth: "a"}}
	}
	tests := []struct {
		name    string
		edit    func(n *Node)
		wantErr string // "" for valid
	}{
		{"valid", func(*Node) {}, ""},
		{"no server", func(n *Node) { n.Server = "" }, "server"},
		{"no port", func(n *Node) { n.Port = 0 }, "port"},
		{"two protocols", func(n *Node) { n.VLESS = &VLESSOptions{UUID: "u"} }, "exactly one"},
		{"options of another protocol", func(n *Node) { n.Hysteria2 = nil; n.Trojan = &TrojanOptions{} }, "hysteria2"},
		{"unknown protocol", func(n *Node) { n.Protocol = "ssr" }, "protocol"},
		{"unknown obfs", func(n *Node) { n.Hysteria2.Obfs = "xor" }, "obfs"},
		{"salamander without password", func(n *Node) { n.Hysteria2.Obfs = "salamander" }, "obfs-password"},
		{"unknown transport", func(n *Node) { n.Transport = &Transport{Type: "kcp"} }, "transport"},
		{"vless without uuid", func(n *Node) { n.Protocol, n.Hysteria2, n.VLESS = VLESS, nil, &VLESSOptions{} }, "uuid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := hy()
			tt.edit(n)
			err := n.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
	if got := (&Node{Server: "2001:db8::1", Port: 443}).Address(); got != "[2001:db8::1]:443" {
		t.Errorf("Address = %q", got)
	}
}
