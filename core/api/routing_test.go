package api

import (
	"context"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
)

// TestSetRouting: through both backends a routing is saved while
// stopped, applied live while connected (the status says it), and an
// unknown one is a bad request that changes nothing.
func TestSetRouting(t *testing.T) {
	l, c := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := l.Import(ctx, ImportRequest{Body: hy2Link}); err != nil {
		t.Fatal(err)
	}
	saved := func() string {
		p, _, err := l.Profile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p.Routing
	}
	for name, b := range map[string]Backend{"local": l, "client": c} {
		t.Run(name, func(t *testing.T) {
			for _, tt := range []struct {
				routing string
				code    Code   // "": it works
				saved   string // what the profile holds after
			}{
				{"global", "", "global"},
				{"direct", "", "direct"},
				{"rule", "", ""},
				{"global", "", "global"},
				{"GLOBAL", CodeBadRequest, "global"},
				{"tun", CodeBadRequest, "global"},
				{"", "", ""},
			} {
				res, err := b.SetRouting(ctx, RoutingRequest{Routing: tt.routing})
				if tt.code != "" {
					if !IsCode(err, tt.code) {
						t.Errorf("routing %q: %v, want code %s", tt.routing, err, tt.code)
					}
				} else if err != nil || res.Live {
					t.Errorf("routing %q while stopped: %+v, %v; want saved, not live", tt.routing, res, err)
				}
				if got := saved(); got != tt.saved {
					t.Errorf("routing %q: saved %q, want %q", tt.routing, got, tt.saved)
				}
			}

			// Connected: live, and the status reports it.
			if _, err := b.SetRouting(ctx, RoutingRequest{Routing: "direct"}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"}); err != nil {
				t.Fatal(err)
			}
			defer b.Disconnect(ctx)
			if st, _ := b.Status(ctx); st.Routing != "direct" {
				t.Errorf("connected with direct saved: status routing %q", st.Routing)
			}
			res, err := b.SetRouting(ctx, RoutingRequest{Routing: "global"})
			if err != nil || !res.Live {
				t.Fatalf("global while connected: %+v, %v; want live", res, err)
			}
			st, _ := b.Status(ctx)
			if st.Routing != "global" || RoutingOf(st, nil) != core.RoutingGlobal {
				t.Errorf("status routing %q after global", st.Routing)
			}
			if _, err := b.SetRouting(ctx, RoutingRequest{Routing: "everything"}); !IsCode(err, CodeBadRequest) {
				t.Errorf("a bad routing while connected: %v", err)
			}
			if st, _ := b.Status(ctx); st.Routing != "global" {
				t.Errorf("a refused routing changed the running one to %q", st.Routing)
			}
			b.Disconnect(ctx)
			if st, _ := b.Status(ctx); st.Routing != "" {
				t.Errorf("stopped: status routing %q, want none", st.Routing)
			}
			b.SetRouting(ctx, RoutingRequest{Routing: "rule"})
		})
	}
}

func TestRoutingOf(t *testing.T) {
	for _, tt := range []struct {
		name  string
		st    Status
		saved string
		want  core.Routing
	}{
		{"stopped, nothing saved", Status{State: core.Stopped}, "", core.RoutingRule},
		{"stopped, saved", Status{State: core.Stopped}, "direct", core.RoutingDirect},
		{"running wins", Status{State: core.Running, Routing: "global"}, "direct", core.RoutingGlobal},
		{"saved by hand", Status{State: core.Stopped}, "bogus", core.RoutingRule},
	} {
		p, _, _ := newLocal(t).Profile(context.Background())
		p.Routing = tt.saved
		if got := RoutingOf(tt.st, p); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
