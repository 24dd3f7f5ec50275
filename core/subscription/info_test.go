package subscription

import (
	"slices"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

func TestInfoLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		info bool
	}{
		{"剩余流量：98.5 GB", true},
		{"套餐到期：2026-12-31", true},
		{"距离下次重置剩余：12 天", true},
		{"Expire: 2026-12-31", true},
		{"Traffic: 12 GB / 200 GB", true},
		{"官网 example.com", true},
		{"🇭🇰 香港 01", false},
		{"HK IEPL 2x", false},
		{"🇯🇵 日本 Tokyo", false},
		{"US Los Angeles", false},
	} {
		if got := InfoLine(tc.name); got != tc.info {
			t.Errorf("InfoLine(%q) = %v, want %v", tc.name, got, tc.info)
		}
	}
}

// TestInfoLinesAreNoServers: a provider's information lines are kept as
// unusable nodes, in none of the groups (Skiff's or the provider's).
func TestInfoLinesAreNoServers(t *testing.T) {
	p := profile.New()
	mk := func(name string) *node.Node {
		return &node.Node{Name: name, Protocol: node.Trojan, Server: "hk.example.com", Port: 443, Trojan: &node.TrojanOptions{Password: name}, TLS: &node.TLS{SNI: "hk.example.com"}}
	}
	res := &Result{Nodes: []*node.Node{mk("剩余流量：98.5 GB"), mk("套餐到期：2026-12-31"), mk("HK 01"), mk("HK 02")},
		Groups: []Group{{Name: "PROXY", Type: profile.GroupSelector, Members: []string{"剩余流量：98.5 GB", "套餐到期：2026-12-31", "HK 01", "HK 02"}}}}
	sub := &profile.Subscription{ID: "s1"}
	p.Subscriptions = append(p.Subscriptions, sub)
	Apply(p, sub, res, time.Now())
	info := map[string]bool{}
	for _, n := range p.Nodes {
		if InfoLine(n.Config.Name) {
			info[n.ID] = true
			if n.Unsupported == "" || n.Lack == nil || n.Lack.Feature != node.FeatureInfo {
				t.Errorf("%s: unsupported %q lack %+v", n.Config.Name, n.Unsupported, n.Lack)
			}
		}
	}
	if len(info) != 2 {
		t.Fatalf("%d information lines among the nodes, want 2", len(info))
	}
	if len(p.Groups) == 0 {
		t.Fatal("no groups")
	}
	for _, g := range p.Groups {
		if slices.ContainsFunc(g.Members, func(m string) bool { return info[m] }) {
			t.Errorf("group %s holds an information line: %v", g.Name, g.Members)
		}
	}
}
