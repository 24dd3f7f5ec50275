package api

import (
	"context"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/plan"
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

// FuzzSelectRequest: a select or mode request, whatever its bytes, is
// decoded or refused as a bad request, and a decoded pick is applied to a
// profile or refused with a typed code, never more.
func FuzzSelectRequest(f *testing.F) {
	for _, s := range []string{`{"id":"na"}`, `{"group":"gs","id":"nb"}`, `{"group":"gf","id":"na"}`, `{"id":""}`,
		`{"mode":"system-proxy"}`, `{"mode":"tun"}`, `{"mode":"x"}`, `{"id":1}`, `null`, `{"group":"gs","id":"gs"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var sr SelectRequest
		if err := DecodeRequest(strings.NewReader(string(b)), maxRequest, &sr); err == nil {
			p := &profile.Profile{
				Nodes:  []*profile.Node{{ID: "na"}, {ID: "nb"}},
				Groups: []*profile.Group{{ID: "gs", Type: profile.GroupSelector, Members: []string{"na", "nb"}}, {ID: "gf", Type: profile.GroupFailover, Members: []string{"na"}}},
			}
			if err := applySelect(p, sr); err != nil && !IsCode(err, CodeNotFound) && !IsCode(err, CodeBadRequest) {
				t.Fatalf("pick %+v refused with code %s", sr, CodeOf(err))
			} else if err == nil && sr.Group == "" && p.Selected != sr.ID {
				t.Fatalf("pick %+v applied as %q", sr, p.Selected)
			}
		} else if CodeOf(err) != CodeBadRequest && CodeOf(err) != CodeTooLarge {
			t.Fatalf("decode error with code %s", CodeOf(err))
		}
		var mr ModeRequest
		if err := DecodeRequest(strings.NewReader(string(b)), maxRequest, &mr); err == nil {
			(plan.Request{Mode: mr.Mode}).Validate()
		}
	})
}
