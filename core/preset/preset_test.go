package preset_test

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestPresetsPlan expands every preset, plans a run from it, and finds the
// preset again from its expansion — but not once a rule is edited.
func TestPresetsPlan(t *testing.T) {
	n, err := link.Parse("hysteria2://secret@127.0.0.1:9/?insecure=1#Home")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		sets  int
		final string
	}{
		preset.Everything:  {0, core.TargetProxy},
		preset.BypassCN:    {2, core.TargetProxy},
		preset.ProxyListed: {1, core.TargetDirect},
	}
	for _, pr := range preset.List() {
		r, err := preset.Routes(pr.Name, profile.SubRulesFirst)
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
			if !strings.HasPrefix(s.URL, "https://") || s.Interval != preset.Interval {
				t.Errorf("%s: set %+v", pr.Name, s)
			}
		}
		if got := preset.Which(&p.Routes); got != pr.Name {
			t.Errorf("Which(%s) = %q", pr.Name, got)
		}
		p.Routes.Rules[0].Target = core.TargetBlock
		if got := preset.Which(&p.Routes); got != "" {
			t.Errorf("Which(edited %s) = %q, want none", pr.Name, got)
		}
	}
	if _, err := preset.Routes("nope", ""); err == nil {
		t.Error("unknown preset: no error")
	}
}

// TestRetiredGFWList: a profile saved with the GFW list an earlier preset
// wrote (SagerNet's geosite-gfw: gfw.report alone) is still that preset,
// and its run downloads the list that replaced it.
func TestRetiredGFWList(t *testing.T) {
	const old = "https://raw.githubusercontent.com/SagerNet/sing-geosite/rule-set/geosite-gfw.srs"
	n, err := link.Parse("hysteria2://secret@127.0.0.1:9/?insecure=1#Home")
	if err != nil {
		t.Fatal(err)
	}
	p := profile.New()
	p.Nodes = []*profile.Node{{ID: "n1", Config: *n}}
	if p.Routes, err = preset.Routes(preset.ProxyListed, ""); err != nil {
		t.Fatal(err)
	}
	p.Routes.RuleSets[0].URL = old
	if got := preset.Which(&p.Routes); got != preset.ProxyListed {
		t.Errorf("Which = %q, want %s", got, preset.ProxyListed)
	}
	pl, err := plan.Build(p, plan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if u := pl.Config.RuleSets[0].URL; u != preset.GeositeGFWURL || u == old {
		t.Errorf("the run downloads %s, want %s", u, preset.GeositeGFWURL)
	}
}
