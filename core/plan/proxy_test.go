package plan_test

import (
	"errors"
	"testing"

	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

func TestBuildProxyAuth(t *testing.T) {
	p := testProfile(t)
	if pl, err := plan.Build(p, plan.Request{Mode: plan.ModeSystemProxy}); err != nil || pl.Config.ProxyAuth != nil {
		t.Fatalf("auth off: %v, %+v", err, pl.Config.ProxyAuth)
	}
	p.Settings.Proxy = profile.Proxy{Username: "alice", Password: "pw"}
	for _, mode := range []string{"", plan.ModeProxy, plan.ModeTUN} {
		pl, err := plan.Build(p, plan.Request{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if a := pl.Config.ProxyAuth; a == nil || a.Username != "alice" || a.Password != "pw" {
			t.Errorf("mode %q: ProxyAuth %+v", mode, a)
		}
	}
	if _, err := plan.Build(p, plan.Request{Mode: plan.ModeSystemProxy}); !errors.Is(err, plan.ErrSystemProxyAuth) {
		t.Errorf("system-proxy mode with auth on: %v", err)
	}
	for _, bad := range []profile.Proxy{{Password: "pw"}, {Username: "alice"}, {Username: "a:b", Password: "pw"}} {
		if err := plan.CheckProxy(bad); err == nil {
			t.Errorf("CheckProxy(%+v) = nil", bad)
		}
		p.Settings.Proxy = bad
		if _, err := plan.Build(p, plan.Request{}); err == nil {
			t.Errorf("Build with %+v: no error", bad)
		}
	}
}
