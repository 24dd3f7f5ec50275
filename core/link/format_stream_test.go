package link

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

// Options a subscription can set but a share link cannot carry are
// refused by Format, not dropped from the link.
func TestFormatRefusesLinklessOptions(t *testing.T) {
	vm := func(mod func(*node.Node)) *node.Node {
		n := &node.Node{Name: "v", Protocol: node.VMess, Server: "v.example", Port: 443, VMess: &node.VMessOptions{UUID: testUUID}}
		mod(n)
		return n
	}
	tr := func(mod func(*node.Node)) *node.Node {
		n := &node.Node{Name: "t", Protocol: node.Trojan, Server: "t.example", Port: 443, TLS: &node.TLS{}, Trojan: &node.TrojanOptions{Password: "pw"}}
		mod(n)
		return n
	}
	for _, n := range []*node.Node{
		vm(func(n *node.Node) { n.VMess.GlobalPadding = true }),
		vm(func(n *node.Node) { n.VMess.PacketEncoding = "xudp" }),
		vm(func(n *node.Node) { n.Multiplex = "smux" }),
		tr(func(n *node.Node) { n.Trojan.SSMethod = "aes-128-gcm" }),
		tr(func(n *node.Node) { n.Multiplex = "h2mux" }),
	} {
		if l, err := Format(n); err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: Format = %q, %v; want a refusal", n.Name, l, err)
		}
	}
	if _, err := Format(vm(func(*node.Node) {})); err != nil {
		t.Fatal(err)
	}
}
