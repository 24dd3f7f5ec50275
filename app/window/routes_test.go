package window

import (
	"net"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestRuleTargetsInTheEditor: the rule editor offers every target the
// core accepts (plan.RuleTargets: the groups, a subscription's too, and
// the nodes), saves the one picked by its ID; a running rule's row shows
// its target group's member and health, the same state the member list
// shows for that group; a rule whose target is gone says so and is kept.
func TestRuleTargetsInTheEditor(t *testing.T) {
	const (
		hkA  = "hysteria2://secret@127.0.0.1:7/?insecure=1#HK A"
		hkB  = "hysteria2://secret@127.0.0.1:5/?insecure=1#HK B"
		grpc = "vless://b831381d-6324-4d53-ad4f-8cda48b30811@127.0.0.1:443?encryption=none&security=tls&type=tcp&headerType=http#HTTP-header Home"
	)
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, func(p *profile.Profile) {
		addLinks(t, hy2Link, hkA, hkB, grpc)(p)
		p.Subscriptions = append(p.Subscriptions, &profile.Subscription{ID: "s1", URL: "https://provider.example/s", Title: "Provider"})
		home := &profile.Group{ID: "g1", Name: "Home", Type: profile.GroupFailover, Members: []string{p.Nodes[0].ID}}
		hk := &profile.Group{ID: "g2", Name: "Hong Kong", Type: profile.GroupFailover, Subscription: "s1", Origin: profile.OriginProvider,
			Members: []string{p.Nodes[1].ID, p.Nodes[2].ID}}
		dead := &profile.Group{ID: "g3", Name: "HTTP-header only", Type: profile.GroupFailover, Members: []string{p.Nodes[3].ID}}
		p.Groups = []*profile.Group{home, hk, dead}
		p.Selected = home.ID
	})
	v := h.ui.routes
	h.ui.tabs.SelectIndex(2)
	h.waitFor("the profile", func() bool { return len(v.p.Groups) == 3 })

	// What is offered is what the core accepts, by words: the HTTP-header node
	// and the group of it alone are not.
	want := []string{"direct", "block", "proxy", "Home (group)", "Hong Kong (group, Provider)", "Hy2 Home (server)", "HK A (server)", "HK B (server)"}
	if got := v.targetShown; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("targets offered %q, want %q", got, want)
	}
	if v.target.Text != "direct" {
		t.Errorf("the editor starts on %q, want direct", v.target.Text)
	}
	// Typing narrows the list; words that name no target are refused.
	v.target.SetText("hk")
	if got := strings.Join(v.targetShown, "|"); got != "HK A (server)|HK B (server)" {
		t.Errorf("typing hk offers %q", got)
	}
	v.values.SetText("x.example")
	test.Tap(v.addRule)
	if len(v.p.Routes.Rules) != 0 || v.note.Text != tr("routes.ruleNeedsTarget") {
		t.Errorf("a rule to %q: rules %+v, note %q", v.target.Text, v.p.Routes.Rules, v.note.Text)
	}
	if len(v.targets) != len(plan.RuleTargets(v.p)) {
		t.Errorf("the editor lists %d targets, the core %d", len(v.targets), len(plan.RuleTargets(v.p)))
	}
	v.target.SetText("Hong Kong (group, Provider)")
	if len(v.targetShown) != len(want) {
		t.Errorf("a target picked: the list offers %q, want all again", v.targetShown)
	}
	v.values.SetText("hk.example, hk.test")
	test.Tap(v.addRule)
	h.waitFor("the rule saved", func() bool { return len(v.p.Routes.Rules) == 1 })
	if r := v.p.Routes.Rules[0]; r.Target != "g2" || r.Type != ruleTypeCustom || len(r.Values) != 2 {
		t.Fatalf("saved rule %+v, want domain_suffix → g2", r)
	}
	if v.target.Text != "Hong Kong (group, Provider)" {
		t.Errorf("after adding, the editor shows %q: the pick should stay", v.target.Text)
	}
	if !strings.Contains(v.rows[0].text, "→ Hong Kong") || v.rows[0].bad || v.rows[0].target != "" {
		t.Errorf("row before connecting %+v", v.rows[0])
	}

	// Connected: the rule's group runs as a target of its own; its row,
	// the group list and the member list show its live state.
	h.ui.tabs.SelectIndex(0)
	test.Tap(h.ui.home.toggle)
	h.waitFor("the core to run", func() bool { return h.ui.home.toggle.Text == "Disconnect" })
	h.ui.tabs.SelectIndex(2)
	// A flow for the rule puts the group in use, so it checks its members.
	c, err := net.DialTimeout("tcp", h.ctrl.Status().Listen, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len("a.hk.example"))}, append([]byte("a.hk.example"), 0, 80)...))
	h.waitFor("Hong Kong's members checked", func() bool {
		h.ui.pullLive()
		g := h.ui.liveGroup("Hong Kong")
		return g != nil && len(g.Members) == 2 && g.Members[0].Health != group.Unknown
	})
	h.waitFor("the row to follow the route", func() bool { v.update(); return v.rows[0].target == "Hong Kong" })
	g := h.ui.liveGroup("Hong Kong")
	state := "▶ " + g.Current + " · " + memberHealth(g.Members, g.Current, detailBrief)
	if g.Current == "" {
		state = tr("home.noUsableServer")
	}
	if got := v.rowText(v.rows[0], false); !strings.HasSuffix(got, "("+state+")") {
		t.Errorf("running rule's row %q, want its group's state %q", got, state)
	}
	row := v.groupList.CreateItem()
	v.groupList.UpdateItem(1, row)
	if got := row.(*widget.Label).Text; !strings.Contains(got, "rules' target: "+state) {
		t.Errorf("Hong Kong's group row %q, want it marked as the rules' target", got)
	}
	v.groupList.UpdateItem(0, row)
	if got := row.(*widget.Label).Text; strings.Contains(got, "rules' target") {
		t.Errorf("the route's group row %q is marked as a rules' target", got)
	}
	v.groupList.Select(1)
	if len(v.live) != 2 || v.live[0].Name != "HK A" {
		t.Errorf("member list for Hong Kong: live %+v, want its two members", v.live)
	}
	if got := v.healthOf("HK A", false); got == tr("routes.notInUse") || !strings.Contains(got, healthLabel(v.live[0].Health)) {
		t.Errorf("HK A's health %q, want its live state", got)
	}
	// Home still speaks of the route's group only.
	if gs := h.ui.routeGroups(); len(gs) != 0 {
		t.Errorf("route groups %+v: the route is one server", gs)
	}
	// The group's switch off its dead first member is in the switch log
	// under its name, and not Home's reason.
	h.waitFor("Hong Kong's switch", func() bool { v.update(); return len(v.switches) > 0 })
	for _, e := range v.switches {
		if e.Group != "Hong Kong" {
			t.Errorf("switch %+v, want Hong Kong's", e)
		}
	}
	sw := v.switchLog.CreateItem()
	v.switchLog.UpdateItem(0, sw)
	if got := sw.(*widget.Label).Text; !strings.Contains(got, "Hong Kong: HK ") {
		t.Errorf("switch log row %q", got)
	}
	if _, why := h.ui.home.member(h.ui.currentRoute(), api.Status{}, nil); why != tr("home.onlyServer") {
		t.Errorf("Home's reason %q: a rule target's switch is not the route's", why)
	}
	h.ui.tabs.SelectIndex(0)
	test.Tap(h.ui.home.toggle)
	h.waitFor("the core to stop", func() bool { return h.ui.home.toggle.Text != "Disconnect" })
	h.ui.tabs.SelectIndex(2)
	h.waitFor("the live state gone", func() bool { v.update(); return v.rows[0].target == "" })

	// The group removed: the rule stays, says its target is gone, and
	// the editor no longer offers it.
	v.groupList.Select(1)
	v.u.update(func(p *profile.Profile) error {
		p.Groups = p.Groups[:1]
		p.Prune()
		return nil
	})
	h.waitFor("the group gone", func() bool { return len(v.p.Groups) == 1 })
	if len(v.p.Routes.Rules) != 1 {
		t.Fatalf("rules after removing their target: %+v", v.p.Routes.Rules)
	}
	if !v.rows[0].bad || !strings.Contains(v.rows[0].text, tr("routes.targetMissing")) {
		t.Errorf("row of the rule whose target is gone: %+v", v.rows[0])
	}
	for _, o := range v.targetShown {
		if strings.HasPrefix(o, "Hong Kong") {
			t.Errorf("the editor still offers %q", o)
		}
	}
	if v.target.Text != tr("routes.targetDirect") {
		t.Errorf("with its pick gone the editor shows %q, want direct", v.target.Text)
	}
	// A target the core cannot dial is said as such.
	v.u.update(func(p *profile.Profile) error {
		p.Routes.Rules = append(p.Routes.Rules, profile.Rule{Type: "domain", Values: []string{"grpc.example"}, Target: p.Nodes[3].ID})
		return nil
	})
	h.waitFor("the second rule", func() bool { return len(v.rows) == 2 })
	if !v.rows[1].bad || !strings.Contains(v.rows[1].text, tr("routes.targetUnusable")) {
		t.Errorf("row of the rule whose target cannot be dialled: %+v", v.rows[1])
	}
	if v.rows[0].target != "" {
		t.Errorf("disconnected rows show live state: %+v", v.rows[0])
	}
}

// TestThousandsOfTargets: a profile of thousands of servers offers them
// all to the rule editor by typing, but lists at most maxTargetChoices at
// once (a menu of thousands takes seconds to open).
func TestThousandsOfTargets(t *testing.T) {
	h := newHarness(t, Prefs{}, manyNodes(t, 3000))
	v := h.ui.routes
	h.waitFor("the profile", func() bool { return len(v.p.Nodes) == 3000 })
	if len(v.targets) != 3003 || len(v.targetShown) != maxTargetChoices {
		t.Errorf("%d targets, %d listed; want 3003 and %d", len(v.targets), len(v.targetShown), maxTargetChoices)
	}
	v.target.SetText("server 2999")
	if len(v.targetShown) != 1 || v.targetShown[0] != "Server 2999 (server)" {
		t.Errorf("typing server 2999 offers %q", v.targetShown)
	}
}
