package preset

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestPresetsPlan expands every preset, plans a run from it, and finds the
// preset again from its expansion — but not once a rule is edited.
func TestPresetsPlan(t *testing.T) {
	if targetDirect != core.TargetDirect || targetProxy != core.TargetProxy {
		t.Fatal("the presets' target names are not the core's")
	}
	n, err := link.Parse("hysteria2://secret@127.0.0.1:9/?insecure=1#Home")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		sets  int
		final string
	}{
		Everything:  {0, core.TargetProxy},
		BypassCN:    {2, core.TargetProxy},
		ProxyListed: {1, core.TargetDirect},
	}
	for _, pr := range List() {
		r, err := Routes(pr.Name, profile.SubRulesFirst)
		if err != nil {
			t.Fatal(err)
		}
		p := profile.New()
		p.Nodes = []*profile.Node{{ID: "n1", Config: *n}}
		p.Routes = r
		pl, err := plan.Build(p, plan.Request{})
		if err != nil {
			t.Fatalf("%s: %v", pr.Name, err)
		}
		w := want[pr.Name]
		if len(pl.Config.RuleSets) != w.sets || pl.Config.Final != w.final || !pl.Config.Rules[0].Private {
			t.Errorf("%s: planned %d sets, final %s, rules %+v", pr.Name, len(pl.Config.RuleSets), pl.Config.Final, pl.Config.Rules)
		}
		for _, s := range pl.Config.RuleSets {
			if !strings.HasPrefix(s.URL, "https://") || s.Interval != Interval {
				t.Errorf("%s: set %+v", pr.Name, s)
			}
		}
		if got := Which(&p.Routes); got != pr.Name {
			t.Errorf("Which(%s) = %q", pr.Name, got)
		}
		p.Routes.Rules[0].Target = core.TargetBlock
		if got := Which(&p.Routes); got != "" {
			t.Errorf("Which(edited %s) = %q, want none", pr.Name, got)
		}
	}
	if _, err := Routes("nope", ""); err == nil {
		t.Error("unknown preset: no error")
	}
}
