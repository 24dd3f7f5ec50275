package route

import (
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/block"
	"github.com/skiffvpn/skiff/core/outbound/direct"
	"github.com/skiffvpn/skiff/core/rule"
)

func TestTable(t *testing.T) {
	rules, final, _ := rule.Builtin(rule.BuiltinTunnelAll, "proxy", "direct", nil)
	set, err := rule.Compile(rules, final)
	if err != nil {
		t.Fatal(err)
	}
	d := direct.New(&outbound.SystemDialer{})
	p := block.New()
	tab, err := NewTable(set, map[string]outbound.Outbound{"direct": d, "proxy": p})
	if err != nil {
		t.Fatal(err)
	}
	for dst, want := range map[string]string{"192.168.0.1:80": "direct", "example.com:443": "proxy"} {
		a, _ := flow.ParseAddr(dst)
		ob, name, err := tab.Route(&flow.Metadata{Network: flow.TCP, Destination: a})
		if err != nil || name != want {
			t.Errorf("%s: got %q, %v; want %q", dst, name, err, want)
		}
		if (want == "direct" && ob != outbound.Outbound(d)) || (want == "proxy" && ob != outbound.Outbound(p)) {
			t.Errorf("%s: wrong outbound for %q", dst, name)
		}
	}
	if _, err := NewTable(set, map[string]outbound.Outbound{"direct": d}); err == nil {
		t.Error("a missing target should be an error")
	}
}

// TestTableOverride: an override routes new flows instead of the rules,
// a refresh of the rules meanwhile does not undo it, and Override(nil)
// brings the rules back.
func TestTableOverride(t *testing.T) {
	rules, err := rule.Compile([]rule.Rule{{Domain: []string{"x.test"}, Target: "direct"}}, "proxy")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := rule.Compile(nil, "proxy")
	targets := map[string]outbound.Outbound{"direct": direct.New(&outbound.SystemDialer{}), "proxy": block.New()}
	tab, err := NewTable(rules, targets)
	if err != nil {
		t.Fatal(err)
	}
	route := func() string {
		_, name, _ := tab.Route(&flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "x.test", Port: 443}})
		return name
	}
	for _, step := range []struct {
		do   func() error
		want string
	}{
		{func() error { return nil }, "direct"},
		{func() error { return tab.Override(all) }, "proxy"},
		{func() error { return tab.SetRules(rules) }, "proxy"},
		{func() error { return tab.Override(nil) }, "direct"},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		if got := route(); got != step.want {
			t.Errorf("x.test went to %q, want %q", got, step.want)
		}
	}
	missing, _ := rule.Compile(nil, "nowhere")
	if err := tab.Override(missing); err == nil {
		t.Error("an override naming a missing target was taken")
	}
	if tab.InForce() != rules {
		t.Error("a refused override changed the rules in force")
	}
}
