package plan_test

import (
	"testing"

	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestProvidedRuleSets: the rule sets a subscription brings are marked as
// the provider's (their URLs may not reach loopback or private hosts); the
// user's own are not, nor is a provider's set that is the user's too.
func TestProvidedRuleSets(t *testing.T) {
	p := testProfile(t)
	p.Routes.RuleSets = []profile.RuleSet{
		{Name: "mine", URL: "http://127.0.0.1:25500/mine.list", Format: "clash-domain"},
	}
	p.Routes.Rules = []profile.Rule{{Type: "rule_set", Values: []string{"mine"}, Target: "direct"}}
	p.Subscriptions[0].Routes = &profile.SubRoutes{
		RuleSets: []profile.RuleSet{
			{Name: "admin", URL: "http://127.0.0.1:8080/admin", Format: "clash-domain"},
			{Name: "same", URL: "http://127.0.0.1:25500/mine.list", Format: "clash-domain"},
		},
		Rules: []profile.Rule{{Type: "rule_set", Values: []string{"admin", "same"}, Target: "block"}},
		Total: 1,
	}
	pl, err := plan.Build(p, plan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range pl.Config.RuleSets {
		got[s.Name] = s.Provided
	}
	want := map[string]bool{"mine": false, "s1/admin": true}
	if len(got) != len(want) {
		t.Fatalf("rule sets %v, want %v", got, want)
	}
	for n, w := range want {
		if g, ok := got[n]; !ok || g != w {
			t.Errorf("rule set %q: provided %v (present %v), want %v", n, g, ok, w)
		}
	}
}
