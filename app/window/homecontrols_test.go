package window

import (
	"context"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
)

// TestHomeRouting: a tap on Rule, Global or Direct reaches the backend:
// saved while disconnected (and shown from the profile), applied to the
// running core while connected, the button of the routing in force marked.
func TestHomeRouting(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link))
	c := h.ui.home.controls
	marked := func() core.Routing {
		var out []core.Routing
		for i, b := range c.routing {
			if b.Importance == widget.HighImportance {
				out = append(out, core.Routings[i])
			}
		}
		if len(out) != 1 {
			t.Fatalf("%d routing buttons marked, want 1", len(out))
		}
		return out[0]
	}
	saved := func() string {
		p, _, err := h.ui.b.Profile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return p.Routing
	}
	if marked() != core.RoutingRule || c.routingNote.Text != "Connections follow the rules of the Routes tab." {
		t.Fatalf("at first: %q marked, note %q", marked(), c.routingNote.Text)
	}
	test.Tap(c.routing[1]) // Global
	h.waitFor("global to be saved", func() bool { return saved() == "global" && !c.busy })
	if marked() != core.RoutingGlobal || !strings.Contains(c.routingNote.Text, "through the selected route") {
		t.Errorf("after Global: %q marked, note %q", marked(), c.routingNote.Text)
	}
	h.ui.refresh()
	if marked() != core.RoutingGlobal {
		t.Errorf("a refresh while stopped shows %q, want the saved global", marked())
	}

	test.Tap(h.ui.home.toggle)
	h.waitFor("the core to run", func() bool { return h.ctrl.Status().State == core.Running })
	if st := h.ctrl.Status(); st.Routing != core.RoutingGlobal {
		t.Errorf("connected with global saved: the core routes %q", st.Routing)
	}
	test.Tap(c.routing[2]) // Direct
	h.waitFor("the core to route direct", func() bool { return h.ctrl.Status().Routing == core.RoutingDirect && !c.busy })
	h.waitFor("Home to show it", func() bool { h.ui.refresh(); return marked() == core.RoutingDirect })
	test.Tap(c.routing[0]) // Rule
	h.waitFor("the core to route by the rules", func() bool { return h.ctrl.Status().Routing == core.RoutingRule && !c.busy })
	if saved() != "" {
		t.Errorf("rule saved as %q, want the default", saved())
	}
}

// TestHomeModeToggles: the System proxy and VPN toggles ask for their
// mode (kept while disconnected: the next Connect's), turning one on turns
// the other off, both off is the local proxy; a running TUN status is
// said in plain words.
func TestHomeModeToggles(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link))
	home := h.ui.home
	c := home.controls
	for _, step := range []struct {
		tap        *widget.Check
		mode       string
		sys, tunOn bool
	}{
		{c.vpn, plan.ModeTUN, false, true},
		{c.sysProxy, plan.ModeSystemProxy, true, false},
		{c.sysProxy, plan.ModeProxy, false, false},
	} {
		test.Tap(step.tap)
		h.waitFor("the mode "+step.mode, func() bool { return h.ui.Prefs().Mode == step.mode && !home.changing })
		if c.sysProxy.Checked != step.sys || c.vpn.Checked != step.tunOn {
			t.Errorf("%s: system proxy %v, VPN %v", step.mode, c.sysProxy.Checked, c.vpn.Checked)
		}
	}
	if c.vpnOn.Visible() {
		t.Error("the VPN line shows while stopped")
	}
	home.update(api.Status{State: core.Running, TUN: "skiff0", Listen: "127.0.0.1:1080", Route: &api.Route{Mode: plan.ModeTUN}}, core.Snapshot{})
	if !c.vpnOn.Visible() || c.vpnOn.Text != "VPN mode: all traffic of this machine goes through Skiff (skiff0)." {
		t.Errorf("TUN running: the VPN line %v %q", c.vpnOn.Visible(), c.vpnOn.Text)
	}
	home.update(api.Status{State: core.Stopped}, core.Snapshot{})
	if c.vpnOn.Visible() {
		t.Error("the VPN line stays after the run")
	}
}
