package subscription

import (
	"reflect"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

func hyNode(name, server string) *node.Node {
	return &node.Node{Name: name, Protocol: node.Hysteria2, Server: server, Port: 443, Hysteria2: &node.Hysteria2Options{Auth: "a"}}
}

// TestApplyKeepsOrderAndOthers: refreshing one subscription leaves the
// other subscriptions' and the hand-imported nodes where they were, and
// duplicate entries get distinct IDs.
func TestApplyKeepsOrderAndOthers(t *testing.T) {
	p := profile.New()
	s1 := &profile.Subscription{ID: "s1"}
	s2 := &profile.Subscription{ID: "s2"}
	p.Subscriptions = []*profile.Subscription{s1, s2}
	AddNodes(p, []*node.Node{hyNode("manual", "m.example.com")})
	now := time.Now()
	Apply(p, s1, &Result{Format: FormatURIList, Nodes: []*node.Node{hyNode("a", "a.example.com"), hyNode("b", "b.example.com")}}, now)
	Apply(p, s2, &Result{Format: FormatClash, Nodes: []*node.Node{hyNode("x", "x.example.com"), hyNode("x again", "x.example.com")}}, now)
	names := func() []string {
		var s []string
		for _, n := range p.Nodes {
			s = append(s, n.Name())
		}
		return s
	}
	if got := names(); !reflect.DeepEqual(got, []string{"manual", "a", "b", "x", "x again"}) {
		t.Fatalf("order %q", got)
	}
	if p.Nodes[3].ID == p.Nodes[4].ID {
		t.Fatal("duplicate entries share an ID")
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	p.Nodes[2].Rename = "bee"
	Apply(p, s1, &Result{Format: FormatURIList, Nodes: []*node.Node{hyNode("b", "b.example.com"), hyNode("c", "c.example.com")}}, now)
	if got := names(); !reflect.DeepEqual(got, []string{"manual", "bee", "c", "x", "x again"}) {
		t.Fatalf("after refresh %q", got)
	}
	if n := AddNodes(p, []*node.Node{hyNode("manual", "m.example.com")}); n != 0 {
		t.Errorf("re-adding a hand-imported node added %d", n)
	}
}
