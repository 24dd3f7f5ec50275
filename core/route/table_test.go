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
