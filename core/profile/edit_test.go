package profile

import (
	"slices"
	"testing"
)

func TestEdits(t *testing.T) {
	doc := func() *Profile {
		return &Profile{
			Subscriptions: []*Subscription{{ID: "s1"}, {ID: "s2"}},
			Nodes:         []*Node{{ID: "a", Subscription: "s1"}, {ID: "b", Subscription: "s2"}, {ID: "c"}},
			Groups:        []*Group{{ID: "g1", Members: []string{"a", "b", "c"}, Selected: "a"}, {ID: "g2", Members: []string{"g1", "c"}}},
			Selected:      "g1",
			Routes:        Routes{Rules: []Rule{{Type: "domain", Target: "direct"}, {Type: "port", Target: "block"}}},
		}
	}
	ids := func(p *Profile) (subs, nodes, groups []string) {
		for _, s := range p.Subscriptions {
			subs = append(subs, s.ID)
		}
		for _, n := range p.Nodes {
			nodes = append(nodes, n.ID)
		}
		for _, g := range p.Groups {
			groups = append(groups, g.ID)
		}
		return
	}
	tests := []struct {
		name  string
		edit  func(*Profile)
		check func(t *testing.T, p *Profile)
	}{
		{"remove group prunes its uses", func(p *Profile) { p.RemoveGroup("g1") }, func(t *testing.T, p *Profile) {
			_, _, gs := ids(p)
			if !slices.Equal(gs, []string{"g2"}) || !slices.Equal(p.Groups[0].Members, []string{"c"}) || p.Selected != "" {
				t.Fatalf("groups %v, g2 members %v, selected %q", gs, p.Groups[0].Members, p.Selected)
			}
		}},
		{"remove a subscription and its nodes", func(p *Profile) { p.RemoveSource("s1") }, func(t *testing.T, p *Profile) {
			subs, nodes, _ := ids(p)
			if !slices.Equal(subs, []string{"s2"}) || !slices.Equal(nodes, []string{"b", "c"}) ||
				!slices.Equal(p.Groups[0].Members, []string{"b", "c"}) || p.Groups[0].Selected != "" {
				t.Fatalf("subs %v nodes %v g1 %+v", subs, nodes, p.Groups[0])
			}
		}},
		{"remove the nodes added by hand", func(p *Profile) { p.RemoveSource("") }, func(t *testing.T, p *Profile) {
			subs, nodes, _ := ids(p)
			if !slices.Equal(subs, []string{"s1", "s2"}) || !slices.Equal(nodes, []string{"a", "b"}) {
				t.Fatalf("subs %v nodes %v", subs, nodes)
			}
		}},
		{"move a member", func(p *Profile) { p.MoveMember("g1", 0, 1) }, func(t *testing.T, p *Profile) {
			if m := p.Groups[0].Members; !slices.Equal(m, []string{"b", "a", "c"}) {
				t.Fatalf("members %v", m)
			}
		}},
		{"move out of range does nothing", func(p *Profile) { p.MoveMember("g1", 2, 3); p.MoveMember("g1", -1, 0); p.MoveMember("nope", 0, 1) }, func(t *testing.T, p *Profile) {
			if m := p.Groups[0].Members; !slices.Equal(m, []string{"a", "b", "c"}) {
				t.Fatalf("members %v", m)
			}
		}},
		{"add and remove rules", func(p *Profile) {
			p.AddRule(Rule{Type: "private", Target: "direct"})
			p.RemoveRule(0)
			p.RemoveRule(5)
			p.RemoveRule(-1)
		}, func(t *testing.T, p *Profile) {
			var types []string
			for _, r := range p.Routes.Rules {
				types = append(types, r.Type)
			}
			if !slices.Equal(types, []string{"port", "private"}) {
				t.Fatalf("rules %v", types)
			}
		}},
		{"select and subscription rules", func(p *Profile) { p.Select("c"); p.SetSubscriptionRules(SubRulesOff) }, func(t *testing.T, p *Profile) {
			if p.Selected != "c" || p.Routes.SubscriptionRules != SubRulesOff {
				t.Fatalf("selected %q, subscription rules %q", p.Selected, p.Routes.SubscriptionRules)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := doc()
			tt.edit(p)
			tt.check(t, p)
		})
	}
}
