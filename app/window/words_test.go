package window

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
)

// testProfile holds, from one subscription, a VLESS+WS+TLS and a Hysteria2
// node for the same server (in that order) and a VMess node.
func testProfile(t *testing.T) *profile.Profile {
	t.Helper()
	p := profile.New()
	sub := &profile.Subscription{ID: "s1", URL: "https://example.com/sub"}
	p.Subscriptions = append(p.Subscriptions, sub)
	var nodes []*node.Node
	for _, l := range []string{vlessLink, hy2Link, vmessLink} {
		n, err := link.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	subscription.Apply(p, sub, &subscription.Result{Format: subscription.FormatURIList, Nodes: nodes}, sub.LastAttempt)
	return p
}

func TestExplain(t *testing.T) {
	tests := []struct {
		code api.Code
		want string
	}{
		{api.CodePortInUse, "Change the port in Settings"},
		{api.CodeNoServer, "Add a subscription"},
		{api.CodeServerAuth, "rejected the password"},
		{api.CodeTUNPermission, "service"},
		{api.CodeForbidden, "group skiff"},
	}
	for _, tt := range tests {
		if got := explain(&api.Error{Code: tt.code, Message: "the core's words"}, false); !strings.Contains(got, tt.want) || strings.Contains(got, "the core's words") {
			t.Errorf("explain(%s) = %q, want it to contain %q", tt.code, got, tt.want)
		}
	}
	if explain(nil, false) != "" {
		t.Error("explain(nil) is not empty")
	}
}

func TestProtocolLabel(t *testing.T) {
	for l, want := range map[string]string{hy2Link: "Hysteria2", vlessLink: "VLESS+WS+TLS", vmessLink: "VMess",
		"wg://192.0.2.1:2408?pk=yAnz5TF%2BlXXJte14tji3zlMNq%2Bhd2rYUIgJBgB3fBmk%3D&pub=bmXOC%2BF1FxEMF9dyiK2H5%2F1SUtzH0JuVo51h2wPfgyo%3D&ip=172.16.0.2":      "WireGuard",
		"wg://192.0.2.1:2408?pk=yAnz5TF%2BlXXJte14tji3zlMNq%2Bhd2rYUIgJBgB3fBmk%3D&pub=bmXOC%2BF1FxEMF9dyiK2H5%2F1SUtzH0JuVo51h2wPfgyo%3D&ip=172.16.0.2&jc=3": "AmneziaWG",
		"ssh://root:pw@192.0.2.1:22?hk=ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAINzaOO3l5g8xkw9yn2q%2BwqZCtSuTaVaw7TMfUBeyehKN":                                  "SSH",
		"ss://YWVzLTEyOC1nY206dGVzdA@192.0.2.1:443/?plugin=shadow-tls%3Bhost%3Dcloud.example.com%3Bpassword%3Dx%3Bversion%3D3":                                "Shadowsocks+ShadowTLS"} {
		n, err := link.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := protocolLabel(n); got != want {
			t.Errorf("protocolLabel(%s) = %q, want %q", n.Name, got, want)
		}
	}
	n := &node.Node{Protocol: node.Trojan, TLS: &node.TLS{ECH: &node.ECH{Config: []byte{1}}}, Multiplex: node.MultiplexSmux}
	if got := protocolLabel(n); got != "Trojan+TLS+ECH+SMUX" {
		t.Errorf("protocolLabel = %q", got)
	}
}
