package app

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core"
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

func TestDefaultGroupsPutHysteria2First(t *testing.T) {
	p := testProfile(t)
	gs := defaultGroups(p)
	if len(gs) != 1 {
		t.Fatalf("%d groups, want 1 for the server offered over two protocols", len(gs))
	}
	var names []string
	for _, id := range gs[0].Members {
		names = append(names, p.Node(id).Name())
	}
	if got := strings.Join(names, ","); got != "Hy2 Home,VLESS Home" {
		t.Errorf("members %s, want Hy2 Home,VLESS Home", got)
	}
	p.Groups = gs
	if again := defaultGroups(p); len(again) != 0 {
		t.Errorf("made %d groups again for servers already grouped", len(again))
	}
}

func TestBuildConfig(t *testing.T) {
	p := testProfile(t)
	hy2 := p.Nodes[1]
	vmess := p.Nodes[2]
	tests := []struct {
		name    string
		edit    func(p *profile.Profile)
		first   string // name of the first server, "" when an error is wanted
		wantErr string
	}{
		{"no selection: Hysteria2 first", nil, "Hy2 Home", ""},
		{"a node", func(p *profile.Profile) { p.Selected = hy2.ID }, "Hy2 Home", ""},
		{"an unusable node", func(p *profile.Profile) { p.Selected = vmess.ID }, "", "can be used"},
		{"a group", func(p *profile.Profile) {
			p.Groups = defaultGroups(p)
			p.Selected = p.Groups[0].ID
		}, "Hy2 Home", ""},
		{"nothing", func(p *profile.Profile) { p.Nodes = nil }, "", "no server"},
		{"a bad rule", func(p *profile.Profile) {
			p.Routes.Rules = []profile.Rule{{Type: "ip_cidr", Values: []string{"nonsense"}, Target: "direct"}}
		}, "", "rule 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testProfile(t)
			if tt.edit != nil {
				tt.edit(p)
			}
			rt, err := buildConfig(p, Prefs{Listen: "127.0.0.1:1081"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rt.cfg.Nodes[0].Name != tt.first || rt.cfg.Listen != "127.0.0.1:1081" || rt.cfg.Final != core.TargetProxy {
				t.Errorf("config first=%q listen=%q final=%q", rt.cfg.Nodes[0].Name, rt.cfg.Listen, rt.cfg.Final)
			}
			for _, n := range rt.cfg.Nodes {
				if n.Protocol == node.VMess {
					t.Errorf("an unsupported node is in the config")
				}
			}
		})
	}
}

func TestCoreRules(t *testing.T) {
	in := []profile.Rule{
		{Type: "domain_suffix", Values: []string{"example.com"}, Target: "direct"},
		{Type: "ip_cidr", Values: []string{"10.0.0.0/8", "192.0.2.1"}, Target: "block"},
		{Type: "port", Values: []string{"443", "8000-8080"}, Target: "n123"},
		{Type: "private", Target: "direct"},
	}
	out, err := coreRules(in)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].DomainSuffix[0] != "example.com" || out[0].Target != core.TargetDirect {
		t.Errorf("rule 1 = %+v", out[0])
	}
	if out[1].IPCIDR[1] != netip.MustParsePrefix("192.0.2.1/32") || out[1].Target != core.TargetBlock {
		t.Errorf("rule 2 = %+v", out[1])
	}
	if len(out[2].Ports) != 2 || out[2].Target != core.TargetProxy {
		t.Errorf("rule 3 = %+v (a node target goes to the proxy)", out[2])
	}
	if !out[3].Private {
		t.Errorf("rule 4 = %+v", out[3])
	}
	if _, err := coreRules([]profile.Rule{{Type: "geosite", Values: []string{"cn"}}}); err == nil {
		t.Error("an unknown rule type was accepted")
	}
}

func TestExplain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"mixed: listen tcp 127.0.0.1:1080: bind: address already in use", "Change the port in Settings"},
		{"core: no server configured", "Add a subscription"},
		{"hysteria2: auth to 1.2.3.4:443: rejected (status 401)", "rejected the password"},
		{"open /dev/net/tun: operation not permitted", "rights"},
		{"dial: i/o timeout", "did not answer in time"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := explain(tt.in); !strings.Contains(got, tt.want) {
			t.Errorf("explain(%q) = %q, want it to contain %q", tt.in, got, tt.want)
		}
	}
}

func TestProtocolLabel(t *testing.T) {
	for l, want := range map[string]string{hy2Link: "Hysteria2", vlessLink: "VLESS+WS+TLS", vmessLink: "VMess"} {
		n, err := link.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := protocolLabel(n); got != want {
			t.Errorf("protocolLabel(%s) = %q, want %q", n.Name, got, want)
		}
	}
}

func TestBuildConfigTUN(t *testing.T) {
	p := testProfile(t)
	strict := true
	p.Settings.TUN.StrictRoute = &strict
	p.Settings.TUN.MTU = 1500
	rt, err := buildConfig(p, Prefs{Mode: ModeTUN, IPv6: true, DNSMode: core.DNSRealIP})
	if err != nil {
		t.Fatal(err)
	}
	tc := rt.cfg.TUN
	if tc == nil || !tc.Strict || tc.MTU != 1500 || !tc.IPv6 || !tc.ExcludePrivate || tc.DNS.Mode != core.DNSRealIP {
		t.Errorf("TUN config %+v", tc)
	}
	if rt, _ := buildConfig(p, Prefs{Mode: ModeProxy}); rt.cfg.TUN != nil {
		t.Error("proxy mode turned TUN on")
	}
	if got := explain(core.ErrTUNPermission.Error()); !strings.Contains(got, "rights") {
		t.Errorf("explain(TUN permission) = %q", got)
	}
}
