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

// TestRemoveSourceGroups: removing a subscription takes the groups its
// import made, the user's groups it leaves empty (and those that held only
// them), and the selection that pointed into them; nothing else.
func TestRemoveSourceGroups(t *testing.T) {
	doc := func() *Profile {
		return &Profile{
			Subscriptions: []*Subscription{{ID: "s1"}, {ID: "s2"}},
			Nodes: []*Node{
				{ID: "a1", Subscription: "s1"}, {ID: "a2", Subscription: "s1"},
				{ID: "b1", Subscription: "s2"}, {ID: "h1"},
			},
			Groups: []*Group{
				{ID: "proxy", Type: GroupSelector, Subscription: "s1", Origin: OriginProvider, Members: []string{"auto", "a1", "a2"}, Selected: "auto"},
				{ID: "auto", Type: GroupURLTest, Subscription: "s1", Origin: OriginProvider, Members: []string{"a1", "a2"}},
				{ID: "s1fast", Type: GroupURLTest, Subscription: "s1", Origin: OriginAuto, Members: []string{"a1", "a2"}},
				{ID: "s2fast", Type: GroupURLTest, Subscription: "s2", Origin: OriginAuto, Members: []string{"b1"}},
				{ID: "handfast", Type: GroupURLTest, Origin: OriginAuto, Members: []string{"h1"}},
				{ID: "mine", Type: GroupFailover, Members: []string{"a1", "a2"}},
				{ID: "outer", Type: GroupSelector, Members: []string{"mine"}, Selected: "mine"},
				{ID: "mix", Type: GroupFailover, Members: []string{"a1", "b1", "h1"}},
				{ID: "empty", Type: GroupFailover}, // the user's, empty before: kept
			},
		}
	}
	groups := func(p *Profile) []string {
		var out []string
		for _, g := range p.Groups {
			out = append(out, g.ID)
		}
		return out
	}
	tests := []struct {
		name      string
		selected  string
		remove    string
		groups    []string
		wantSel   string
		mixMember []string
	}{
		{"subscription with its selected group", "proxy", "s1", []string{"s2fast", "handfast", "mix", "empty"}, "", []string{"b1", "h1"}},
		{"selection into a user group it empties", "outer", "s1", []string{"s2fast", "handfast", "mix", "empty"}, "", []string{"b1", "h1"}},
		{"selection elsewhere stays", "s2fast", "s1", []string{"s2fast", "handfast", "mix", "empty"}, "s2fast", []string{"b1", "h1"}},
		{"another subscription", "proxy", "s2", []string{"proxy", "auto", "s1fast", "handfast", "mine", "outer", "mix", "empty"}, "proxy", []string{"a1", "h1"}},
		{"the nodes added by hand", "handfast", "", []string{"proxy", "auto", "s1fast", "s2fast", "mine", "outer", "mix", "empty"}, "", []string{"a1", "b1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := doc()
			p.Selected = tt.selected
			p.RemoveSource(tt.remove)
			if got := groups(p); !slices.Equal(got, tt.groups) {
				t.Errorf("groups %v, want %v", got, tt.groups)
			}
			if p.Selected != tt.wantSel {
				t.Errorf("selected %q, want %q", p.Selected, tt.wantSel)
			}
			if g := p.Group("mix"); g == nil || !slices.Equal(g.Members, tt.mixMember) {
				t.Errorf("mix %+v, want members %v", g, tt.mixMember)
			}
			for _, g := range p.Groups {
				if len(g.Members) == 0 && g.ID != "empty" {
					t.Errorf("group %s left empty", g.ID)
				}
			}
		})
	}
}
