package tun_test

import (
	"testing"

	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestSkiffRunTUNRouting: the profile's routing (Home's Rule | Global |
// Direct) through the product in TUN mode: `skiff run --tun --node` with
// a saved profile whose one rule sends sinkCN direct. Rule follows it;
// Global sends every flow through the server, the rule notwithstanding;
// Direct sends every flow, and a name's lookup, around the server. The
// sinks answer with the address each connection came from (rules_test.go).
func TestSkiffRunTUNRouting(t *testing.T) {
	l, px := newSinkLab(t)
	l.startWhoami(t, t.TempDir(), sinkCN, sinkOther, echoAddr4)
	n, err := link.Parse(px.vlessWS.link)
	if err != nil {
		t.Fatal(err)
	}
	n.Name = "lab"

	for _, tc := range []struct {
		routing string
		// Whether each destination is reached directly.
		cn, other, name bool
	}{
		{"rule", true, false, false},
		{"global", false, false, false},
		{"direct", true, true, true},
	} {
		t.Run(tc.routing, func(t *testing.T) {
			cfgDir := t.TempDir()
			store, err := profile.Open(cfgDir)
			if err != nil {
				t.Fatal(err)
			}
			p := profile.New()
			p.Nodes = []*profile.Node{{ID: "nlab", Config: *n}}
			p.Routes.Rules = []profile.Rule{{Type: "ip_cidr", Values: []string{sinkCN + "/32"}, Target: "direct"}}
			p.Routing = tc.routing
			if err := store.Save(p); err != nil {
				t.Fatal(err)
			}
			s := l.startSkiff(t, t.TempDir(), nil, "--node", "lab", "--config-dir", cfgDir)
			defer s.stop(t)
			for _, d := range []struct {
				hostport string
				direct   bool
			}{
				{sinkCN + ":" + whoPort, tc.cn},
				{sinkOther + ":" + whoPort, tc.other},
				{testName + ":" + whoPort, tc.name},
			} {
				seen, ip := l.who(t, s, "curl", d.hostport)
				if got := seen == cliAddr4; got != d.direct {
					t.Errorf("routing %s: %s (connected to %s) was seen from %s: direct %v, want %v", tc.routing, d.hostport, ip, seen, got, d.direct)
				}
				// A name looked up around the server has its real address.
				if d.hostport == testName+":"+whoPort && d.direct && ip != echoAddr4 {
					t.Errorf("routing %s: %s connected to %s, want its real address %s", tc.routing, testName, ip, echoAddr4)
				}
			}
		})
	}
}
