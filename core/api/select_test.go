package api

import (
	"context"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestSelect saves picks through both backends and refuses the picks the
// profile cannot hold, with the code that says why. (The live switch
// while connected is test/e2e TestLiveSwitch, against real servers.)
func TestSelect(t *testing.T) {
	l, c := pair(t)
	ctx := context.Background()
	err := Update(ctx, l, func(p *profile.Profile) error {
		for _, id := range []string{"na", "nb"} {
			p.Nodes = append(p.Nodes, &profile.Node{ID: id, Config: node.Node{Name: id, Protocol: node.Trojan, Server: "127.0.0.1", Port: 9, Trojan: &node.TrojanOptions{Password: "x"}}})
		}
		p.Groups = []*profile.Group{
			{ID: "gs", Name: "Pick", Type: profile.GroupSelector, Members: []string{"na", "nb"}},
			{ID: "gf", Name: "Auto", Type: profile.GroupFailover, Members: []string{"na", "nb"}},
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		req   SelectRequest
		code  Code // "": it works
		check func(p *profile.Profile) bool
	}{
		{"a node", SelectRequest{ID: "nb"}, "", func(p *profile.Profile) bool { return p.Selected == "nb" }},
		{"a group", SelectRequest{ID: "gf"}, "", func(p *profile.Profile) bool { return p.Selected == "gf" }},
		{"a member", SelectRequest{Group: "gs", ID: "nb"}, "", func(p *profile.Profile) bool { return p.Group("gs").Selected == "nb" }},
		{"no such node", SelectRequest{ID: "nz"}, CodeNotFound, nil},
		{"no such group", SelectRequest{Group: "gz", ID: "na"}, CodeNotFound, nil},
		{"not a member", SelectRequest{Group: "gs", ID: "gf"}, CodeNotFound, nil},
		{"not a select group", SelectRequest{Group: "gf", ID: "na"}, CodeBadRequest, nil},
		{"no id", SelectRequest{}, CodeBadRequest, nil},
	}
	for _, b := range []Backend{l, c} {
		for _, tc := range tests {
			res, err := b.Select(ctx, tc.req)
			if tc.code != "" {
				if !IsCode(err, tc.code) {
					t.Errorf("%T %s: err %v, want code %s", b, tc.name, err, tc.code)
				}
				continue
			}
			if err != nil || res.Live {
				t.Errorf("%T %s: %+v, %v; want saved, not live (stopped)", b, tc.name, res, err)
				continue
			}
			p, _, _ := l.Profile(ctx)
			if !tc.check(p) {
				t.Errorf("%T %s: not saved", b, tc.name)
			}
		}
	}
}
