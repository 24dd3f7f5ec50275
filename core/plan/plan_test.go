package plan_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/plan"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
	"github.com/skiffvpn/skiff/tun"
)

const (
	hy2Link   = "hysteria2://secret@127.0.0.1:9/?insecure=1#Hy2 Home"
	vlessLink = "vless://b831381d-6324-4d53-ad4f-8cda48b30811@127.0.0.1:443?type=ws&security=tls&path=%2Fws#VLESS Home"
	tuicLink  = "vless://b831381d-6324-4d53-ad4f-8cda48b30811@127.0.0.1:443?encryption=none&security=tls&type=tcp&headerType=http#HTTP-header Home" // a transport Skiff cannot dial yet
)

// testProfile holds, from one subscription, a VLESS+WS+TLS, a Hysteria2 and
// a VMess node (in that order).
func testProfile(t *testing.T) *profile.Profile {
	t.Helper()
	p := profile.New()
	sub := &profile.Subscription{ID: "s1", URL: "https://example.com/sub"}
	p.Subscriptions = append(p.Subscriptions, sub)
	res := &subscription.Result{Format: subscription.FormatURIList}
	for _, l := range []string{vlessLink, hy2Link, tuicLink} {
		n, err := link.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		res.Nodes = append(res.Nodes, n)
	}
	subscription.Apply(p, sub, res, sub.LastAttempt)
	return p
}

func TestBuild(t *testing.T) {
	hy2, vless, tuic := 1, 0, 2
	inGroup := func(typ string) func(p *profile.Profile) {
		return func(p *profile.Profile) {
			p.Groups = []*profile.Group{{ID: "g1", Name: "home", Type: typ, Members: []string{p.Nodes[vless].ID, p.Nodes[hy2].ID}, Selected: p.Nodes[hy2].ID}}
			p.Selected = "g1"
		}
	}
	tests := []struct {
		name    string
		edit    func(p *profile.Profile)
		req     plan.Request
		first   string
		mode    group.Mode
		wantErr string
	}{
		{"no selection: Hysteria2 first", nil, plan.Request{}, "Hy2 Home", group.Failover, ""},
		{"a node", func(p *profile.Profile) { p.Selected = p.Nodes[hy2].ID }, plan.Request{}, "Hy2 Home", group.Failover, ""},
		{"a target by name", nil, plan.Request{Target: "VLESS Home"}, "VLESS Home", group.Failover, ""},
		{"an unusable node", func(p *profile.Profile) { p.Selected = p.Nodes[tuic].ID }, plan.Request{}, "", "", "can be used"},
		{"a failover group", inGroup(profile.GroupFailover), plan.Request{}, "VLESS Home", group.Failover, ""},
		{"an urltest group", inGroup(profile.GroupURLTest), plan.Request{}, "VLESS Home", group.URLTest, ""},
		{"a selector group", inGroup(profile.GroupSelector), plan.Request{}, "VLESS Home", group.Selector, ""},
		{"nothing", func(p *profile.Profile) { p.Nodes = nil }, plan.Request{}, "", "", "no server"},
		{"a bad rule", func(p *profile.Profile) {
			p.Routes.Rules = []profile.Rule{{Type: "ip_cidr", Values: []string{"nonsense"}, Target: "direct"}}
		}, plan.Request{}, "", "", "rule 1"},
		{"a bad mode", nil, plan.Request{Mode: "root"}, "", "", "mode"},
		{"a listen address off loopback", nil, plan.Request{Listen: "0.0.0.0:1080"}, "", "", "loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testProfile(t)
			if tt.edit != nil {
				tt.edit(p)
			}
			pl, err := plan.Build(p, tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := pl.Config
			if c.Nodes[0].Name != tt.first || c.Mode != tt.mode || c.Final != core.TargetProxy {
				t.Errorf("first=%q mode=%q final=%q", c.Nodes[0].Name, c.Mode, c.Final)
			}
			if tt.mode == group.Selector && c.Selected != "Hy2 Home" {
				t.Errorf("selector starts with %q, want the saved choice", c.Selected)
			}
			for _, n := range c.Nodes {
				if n.Name == "HTTP-header Home" {
					t.Error("an unsupported node is in the config")
				}
			}
		})
	}
	if _, err := plan.Build(profile.New(), plan.Request{}); !errors.Is(err, plan.ErrNoServer) {
		t.Errorf("empty profile: %v, want plan.ErrNoServer", err)
	}
}

func TestBuildTUN(t *testing.T) {
	p := testProfile(t)
	p.Settings.TUN.MTU = 1500
	pl, err := plan.Build(p, plan.Request{Mode: plan.ModeTUN, DNS: core.DNSRealIP})
	if err != nil {
		t.Fatal(err)
	}
	tc := pl.Config.TUN
	if tc == nil || !tc.Strict || tc.MTU != 1500 || !tc.IPv6 || !tc.ExcludePrivate || tc.DNS.Mode != core.DNSRealIP {
		t.Errorf("TUN config %+v (strict route must default to on)", tc)
	}
	off := false
	p.Settings.TUN.StrictRoute = &off
	if pl, _ := plan.Build(p, plan.Request{Mode: plan.ModeTUN, NoIPv6: true}); pl.Config.TUN.Strict || pl.Config.TUN.IPv6 {
		t.Errorf("strict route off / no IPv6 not honoured: %+v", pl.Config.TUN)
	}
	if pl, _ := plan.Build(p, plan.Request{}); pl.Config.TUN != nil {
		t.Error("proxy mode turned TUN on")
	}
}

func TestRules(t *testing.T) {
	in := []profile.Rule{
		{Type: "domain_suffix", Values: []string{"example.com"}, Target: "direct"},
		{Type: "ip_cidr", Values: []string{"10.0.0.0/8", "192.0.2.1"}, Target: "block"},
		{Type: "port", Values: []string{"443", "8000-8080"}, Target: "n123"},
		{Type: "private", Target: "direct"},
	}
	out, err := plan.Rules(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].DomainSuffix[0] != "example.com" || out[0].Target != core.TargetDirect {
		t.Errorf("rule 1 = %+v", out[0])
	}
	if out[1].IPCIDR[1] != netip.MustParsePrefix("192.0.2.1/32") || out[1].Target != core.TargetBlock {
		t.Errorf("rule 2 = %+v", out[1])
	}
	if len(out[2].Ports) != 2 || out[2].Target != core.TargetProxy {
		t.Errorf("rule 3 = %+v (a node target goes to the proxy)", out[2])
	}
	if !out[3].Private {
		t.Errorf("rule 4 = %+v", out[3])
	}
	if _, err := plan.Rules([]profile.Rule{{Type: "geosite", Values: []string{"cn"}}}, nil); err == nil {
		t.Error("an unknown rule type was accepted")
	}
}

// TestBuildProviderGroups: a Clash subscription's groups run as the
// provider meant: with nothing selected, its first group (a selector over
// groups and servers) with the servers of its member groups in their
// place; a selector whose pick is a group runs that group.
func TestBuildProviderGroups(t *testing.T) {
	const doc = `proxies:
  - {name: "HK Hy2", type: hysteria2, server: 127.0.0.1, port: 443, password: pw, sni: hk.example.com}
  - {name: "HK WS", type: vless, server: 127.0.0.1, port: 8443, uuid: b831381d-6324-4d53-ad4f-8cda48b30811, tls: true, network: ws, servername: hk.example.com, ws-opts: {path: /ws}}
  - {name: "JP Hy2", type: hysteria2, server: 127.0.0.2, port: 443, password: pw, sni: jp.example.com}
proxy-groups:
  - {name: "节点选择", type: select, proxies: ["自动选择", "故障转移", "JP Hy2"]}
  - {name: "自动选择", type: url-test, proxies: ["JP Hy2", "HK Hy2"]}
  - {name: "故障转移", type: fallback, proxies: ["HK WS", "HK Hy2", "节点选择"]}
`
	p := subscribed(t, doc)
	names := func(pl *plan.Plan) string {
		var s []string
		for _, n := range pl.Config.Nodes {
			s = append(s, n.Name)
		}
		return strings.Join(s, ",")
	}
	pl, err := plan.Build(p, plan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing picked: the selector starts on its first member, a group.
	if pl.Name != "节点选择" || pl.Config.Mode != group.URLTest || names(pl) != "JP Hy2,HK Hy2" {
		t.Errorf("no selection: %q %s [%s]", pl.Name, pl.Config.Mode, names(pl))
	}
	// A selector whose members are servers and groups, picked by name:
	// the servers of its groups in their place.
	sel, _ := p.FindGroup("节点选择")
	jp, _ := p.FindNode("JP Hy2")
	sel.Selected = jp.ID
	if pl, err = plan.Build(p, plan.Request{}); err != nil || pl.Config.Mode != group.Selector || names(pl) != "JP Hy2,HK Hy2,HK WS" || pl.Config.Selected != "JP Hy2" {
		t.Errorf("a server picked: %v %s [%s] %q", err, pl.Config.Mode, names(pl), pl.Config.Selected)
	}
	fb, _ := p.FindGroup("故障转移")
	sel.Selected = fb.ID
	if pl, err = plan.Build(p, plan.Request{}); err != nil || pl.Config.Mode != group.Failover || names(pl) != "HK WS,HK Hy2,JP Hy2" {
		t.Errorf("the selector's pick is a group: %v %s [%s]", err, pl.Config.Mode, names(pl))
	}
	// The group that contains itself (故障转移 → 节点选择 → 故障转移) ends.
	if got := plan.Members(p, fb); len(got) != 3 {
		t.Errorf("members of a group in a cycle: %v", got)
	}
	if pl, err = plan.Build(p, plan.Request{Target: "Fastest"}); err != nil || pl.Config.Mode != group.URLTest || len(pl.Config.Nodes) != 3 {
		t.Errorf("Fastest by name: %v %+v", err, pl)
	}
}

// TestRuleSetRoutes plans rule_set and process rules over the profile's
// rule sets, and refuses rule sets and references that cannot run.
func TestRuleSetRoutes(t *testing.T) {
	p := testProfile(t)
	p.Routes = profile.Routes{
		RuleSets: []profile.RuleSet{
			{Name: "cn", URL: "https://example.com/geosite-cn.srs", Format: "sing-box", Interval: profile.Duration(time.Hour)},
			{Name: "mine", Data: []byte("+.mine.example\n"), Format: "clash-domain"},
		},
		Rules: []profile.Rule{
			{Type: "rule_set", Values: []string{"cn", "mine"}, Target: "direct"},
			{Type: "process", Values: []string{"curl", "/usr/bin/wget"}, Target: p.Nodes[0].ID},
		},
		Final: "block",
	}
	pl, err := plan.Build(p, plan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	c := pl.Config
	if len(c.RuleSets) != 2 || c.RuleSets[0].Interval != time.Hour || string(c.RuleSets[1].Data) != "+.mine.example\n" {
		t.Errorf("rule sets: %+v", c.RuleSets)
	}
	if len(c.Rules) != 2 || len(c.Rules[0].RuleSet) != 2 || c.Rules[0].Target != core.TargetDirect ||
		len(c.Rules[1].Process) != 2 || c.Rules[1].Target != p.Nodes[0].Name() || c.Final != core.TargetBlock {
		t.Errorf("rules: %+v final %s", c.Rules, c.Final)
	}
	// The process rule names one node of the route: that node alone.
	if len(c.Targets) != 1 || c.Targets[0].Name != p.Nodes[0].Name() || len(c.Targets[0].Nodes) != 1 {
		t.Errorf("targets: %+v", c.Targets)
	}

	for _, tc := range []struct {
		name string
		edit func(r *profile.Routes)
		want string
	}{
		{"unknown set", func(r *profile.Routes) { r.Rules[0].Values = []string{"nope"} }, `"nope" is not one of the rule sets`},
		{"no name", func(r *profile.Routes) { r.RuleSets[0].Name = "" }, "name"},
		{"twice", func(r *profile.Routes) { r.RuleSets[1].Name = "cn" }, "twice"},
		{"url and data", func(r *profile.Routes) { r.RuleSets[1].URL = "https://x.example/" }, "not both"},
		{"neither", func(r *profile.Routes) { r.RuleSets[1].Data = nil }, "no URL"},
		{"a path", func(r *profile.Routes) { r.RuleSets[0].URL = "file:///etc/shadow" }, "http(s)"},
		{"format", func(r *profile.Routes) { r.RuleSets[0].Format = "mrs" }, "format"},
		{"geoip without country", func(r *profile.Routes) { r.RuleSets[0].Format = "geoip:" }, "empty"},
		{"interval", func(r *profile.Routes) { r.RuleSets[0].Interval = profile.Duration(time.Second) }, "interval"},
		{"big data", func(r *profile.Routes) { r.RuleSets[1].Data = make([]byte, plan.MaxRuleSetData+1) }, "URL"},
	} {
		q := testProfile(t)
		q.Routes = p.Routes
		q.Routes.RuleSets = append([]profile.RuleSet(nil), p.Routes.RuleSets...)
		q.Routes.Rules = append([]profile.Rule(nil), p.Routes.Rules...)
		tc.edit(&q.Routes)
		_, err := plan.Build(q, plan.Request{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// subscribed is a profile with one subscription whose body is doc.
func subscribed(t *testing.T, doc string) *profile.Profile {
	t.Helper()
	res, err := subscription.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := profile.New()
	sub := &profile.Subscription{ID: "s1", URL: "https://example.com/sub"}
	p.Subscriptions = []*profile.Subscription{sub}
	subscription.Apply(p, sub, res, sub.LastAttempt)
	return p
}

// TestBuildRuleTargets: a subscription's rules that name its groups and
// nodes route to them, not to the route's servers; the route's own group
// is the proxy target; a node in both is one core node.
func TestBuildRuleTargets(t *testing.T) {
	const doc = `proxies:
  - {name: "HK Hy2", type: hysteria2, server: 127.0.0.1, port: 443, password: pw, sni: hk.example.com}
  - {name: "JP Hy2", type: hysteria2, server: 127.0.0.2, port: 443, password: pw, sni: jp.example.com}
  - {name: "US Hy2", type: hysteria2, server: 127.0.0.3, port: 443, password: pw, sni: us.example.com}
  - {name: "Old", type: snell, server: 127.0.0.4, port: 443, psk: x}
proxy-groups:
  - {name: "Main", type: select, proxies: ["JP Hy2", "HK Hy2"]}
  - {name: "🇭🇰 Hong Kong", type: fallback, proxies: ["HK Hy2", "US Hy2"]}
  - {name: "Dead", type: select, proxies: ["Old"]}
rules:
  - DOMAIN-SUFFIX,hk.example,🇭🇰 Hong Kong
  - DOMAIN-SUFFIX,us.example,US Hy2
  - DOMAIN-SUFFIX,jp.example,JP Hy2
  - DOMAIN-SUFFIX,main.example,Main
  - DOMAIN-SUFFIX,old.example,Dead
  - MATCH,Main
`
	p := subscribed(t, doc)
	main, err := p.FindGroup("Main")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Build(p, plan.Request{Target: main.ID})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &pl.Config
	got := map[string]string{}
	for _, r := range cfg.Rules {
		if len(r.DomainSuffix) == 1 {
			got[r.DomainSuffix[0]] = r.Target
		}
	}
	want := map[string]string{
		"hk.example":   "🇭🇰 Hong Kong",
		"us.example":   "US Hy2",
		"jp.example":   "JP Hy2",
		"main.example": core.TargetProxy, // the route itself
		"old.example":  core.TargetProxy, // no server Skiff can use: said in Skipped
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("rule %s -> %q, want %q", k, got[k], v)
		}
	}
	if cfg.Final != core.TargetProxy {
		t.Errorf("final %q, want proxy (MATCH,Main is the route)", cfg.Final)
	}
	targets := map[string]core.Target{}
	for _, tg := range cfg.Targets {
		targets[tg.Name] = tg
	}
	if len(targets) != 3 {
		t.Fatalf("targets %+v, want Hong Kong, US Hy2, JP Hy2", cfg.Targets)
	}
	hk := targets["🇭🇰 Hong Kong"]
	if hk.Mode != group.Failover || len(hk.Nodes) != 2 || hk.Nodes[0].Name != "HK Hy2" || hk.Nodes[1].Name != "US Hy2" {
		t.Errorf("Hong Kong target %+v", hk)
	}
	// Shared nodes: HK Hy2 of the route's group and of the Hong Kong
	// group, US Hy2 of the group and the node rule.
	byName := map[string]any{}
	for _, n := range cfg.Nodes {
		byName[n.Name] = n
	}
	if byName["HK Hy2"] != any(hk.Nodes[0]) || byName["JP Hy2"] != any(targets["JP Hy2"].Nodes[0]) || hk.Nodes[1] != targets["US Hy2"].Nodes[0] {
		t.Error("a node used by the route and a target is not one core node")
	}
	if !strings.Contains(strings.Join(pl.Skipped, "\n"), `rule target "`) {
		t.Errorf("Skipped %q does not name the target without usable servers", pl.Skipped)
	}
	// With the Hong Kong group as the route, its rule is the proxy target.
	hkg, _ := p.FindGroup("🇭🇰 Hong Kong")
	if pl, err = plan.Build(p, plan.Request{Target: hkg.ID}); err != nil {
		t.Fatal(err)
	}
	for _, r := range pl.Config.Rules {
		if len(r.DomainSuffix) == 1 && r.DomainSuffix[0] == "hk.example" && r.Target != core.TargetProxy {
			t.Errorf("route Hong Kong: its own rule goes to %q", r.Target)
		}
	}
}

// TestRuleTargetsOffered: what an editor offers as a user's rule's target
// is direct, block, proxy, every group and every node the core can dial;
// a target that no longer exists, or has no such server, is refused with
// a typed reason; and a run says which core target each rule target
// became.
func TestRuleTargetsOffered(t *testing.T) {
	const doc = `proxies:
  - {name: "HK Hy2", type: hysteria2, server: 127.0.0.1, port: 443, password: pw, sni: hk.example.com}
  - {name: "JP Hy2", type: hysteria2, server: 127.0.0.2, port: 443, password: pw, sni: jp.example.com}
  - {name: "Old", type: vless, server: 127.0.0.4, port: 443, uuid: b831381d-6324-4d53-ad4f-8cda48b30811, tls: true, network: http, http-opts: {path: [/]}}
proxy-groups:
  - {name: "Main", type: select, proxies: ["JP Hy2", "HK Hy2"]}
  - {name: "🇭🇰 Hong Kong", type: fallback, proxies: ["HK Hy2"]}
  - {name: "Dead", type: select, proxies: ["Old"]}
`
	p := subscribed(t, doc)
	hk, _ := p.FindGroup("🇭🇰 Hong Kong")
	main, _ := p.FindGroup("Main")
	dead, _ := p.FindGroup("Dead")
	jp, _ := p.FindNode("JP Hy2")
	old, _ := p.FindNode("Old")
	if hk == nil || main == nil || dead == nil || jp == nil || old == nil {
		t.Fatalf("groups %+v, nodes %+v", p.Groups, p.Nodes)
	}
	offered := map[string]plan.RuleTarget{}
	var order []string
	for _, rt := range plan.RuleTargets(p) {
		offered[rt.ID] = rt
		order = append(order, rt.Kind)
	}
	if len(order) < 3 || order[0] != plan.TargetKindBuiltin || order[2] != plan.TargetKindBuiltin || order[3] != plan.TargetKindGroup || order[len(order)-1] != plan.TargetKindNode {
		t.Errorf("kinds in order %v: want the builtins, groups, nodes", order)
	}
	for _, id := range []string{core.TargetDirect, core.TargetBlock, core.TargetProxy, hk.ID, main.ID, jp.ID} {
		if _, ok := offered[id]; !ok {
			t.Errorf("target %s not offered", id)
		}
	}
	if g := offered[hk.ID]; g.Kind != plan.TargetKindGroup || g.Name != "🇭🇰 Hong Kong" || g.Subscription != "s1" {
		t.Errorf("Hong Kong offered as %+v", g)
	}
	for _, id := range []string{dead.ID, old.ID} {
		if _, ok := offered[id]; ok {
			t.Errorf("target %s offered, but no server of it can be used", id)
		}
	}
	for _, tc := range []struct {
		target string
		want   error
	}{
		{core.TargetProxy, nil}, {"", nil}, {core.TargetDirect, nil}, {hk.ID, nil}, {jp.ID, nil},
		{"g-gone", plan.ErrTargetMissing},
		{"🇭🇰 Hong Kong", plan.ErrTargetMissing}, // a name is a subscription rule's way
		{dead.ID, plan.ErrTargetUnusable},
		{old.ID, plan.ErrTargetUnusable},
	} {
		err := plan.CheckRuleTarget(p, nil, tc.target)
		if !errors.Is(err, tc.want) || (err != nil && !strings.Contains(err.Error(), tc.target)) {
			t.Errorf("CheckRuleTarget(%q) = %v, want %v", tc.target, err, tc.want)
		}
	}
	if err := plan.CheckRuleTarget(p, p.Subscriptions[0], "🇭🇰 Hong Kong"); err != nil {
		t.Errorf("the subscription's rule naming its group: %v", err)
	}

	// A run maps every rule target to the core's: the route's group and
	// proxy are the proxy, a missing group falls back to it.
	p.Selected = main.ID
	p.Routes.Rules = []profile.Rule{
		{Type: "domain", Values: []string{"hk.example"}, Target: hk.ID},
		{Type: "domain", Values: []string{"jp.example"}, Target: jp.ID},
		{Type: "domain", Values: []string{"main.example"}, Target: main.ID},
		{Type: "domain", Values: []string{"gone.example"}, Target: "g-gone"},
		{Type: "domain", Values: []string{"cn.example"}, Target: core.TargetDirect},
	}
	pl, err := plan.Build(p, plan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{hk.ID: "🇭🇰 Hong Kong", jp.ID: "JP Hy2", main.ID: core.TargetProxy, "g-gone": core.TargetProxy, core.TargetDirect: core.TargetDirect, "": core.TargetProxy}
	for k, v := range want {
		if pl.Targets[k] != v {
			t.Errorf("plan's target for %q = %q, want %q (all: %v)", k, pl.Targets[k], v, pl.Targets)
		}
	}
	if !strings.Contains(strings.Join(pl.Skipped, "\n"), `rule target "g-gone": no such node or group; its flows use the route's servers`) {
		t.Errorf("Skipped %q does not say the missing target", pl.Skipped)
	}
}

// TestBuildTUNRefusesBadName: issue 28's injection payload as the device
// name is refused when the profile is checked (save) and when a TUN run is
// planned from a profile saved without the check, before anything reaches
// tun.
func TestBuildTUNRefusesBadName(t *testing.T) {
	const payload = `x" accept; }; }; flush ruleset; table ip pwn { chain out { type nat hook output priority -100; udp dport 53 redirect to :5353; }; }; table inet skiff_killswitch { chain output { #`
	for _, s := range []profile.TUN{
		{Name: payload, KillSwitch: true},
		{Name: "utun9 all\npass out quick all\n#", KillSwitch: true},
		{Name: `a"b`},
		{MTU: 100},
	} {
		if err := plan.CheckTUN(s); !errors.Is(err, tun.ErrInvalidConfig) {
			t.Errorf("CheckTUN(%+v) = %v, want tun.ErrInvalidConfig", s, err)
		}
		p := testProfile(t)
		p.Settings.TUN = s
		if pl, err := plan.Build(p, plan.Request{Mode: plan.ModeTUN}); !errors.Is(err, tun.ErrInvalidConfig) {
			t.Errorf("Build(TUN, %+v) = %v, want tun.ErrInvalidConfig", s, err)
		} else if pl.Config.TUN != nil {
			t.Errorf("Build(TUN, %+v) planned a TUN config", s)
		}
	}
	if err := plan.CheckTUN(profile.TUN{Name: "wg-home.1", MTU: 1500}); err != nil {
		t.Errorf("a good name: %v", err)
	}
}

// TestBuildRouting: the profile's routing becomes the run's; one saved by
// hand that is no routing is refused with the reason.
func TestBuildRouting(t *testing.T) {
	for _, tt := range []struct {
		saved string
		want  core.Routing
		ok    bool
	}{
		{"", core.RoutingRule, true},
		{"global", core.RoutingGlobal, true},
		{"direct", core.RoutingDirect, true},
		{"tun", "", false},
	} {
		p := testProfile(t)
		p.Routing = tt.saved
		pl, err := plan.Build(p, plan.Request{})
		if (err == nil) != tt.ok {
			t.Errorf("routing %q: err %v, want ok %v", tt.saved, err, tt.ok)
			continue
		}
		if err == nil && pl.Config.Routing != tt.want {
			t.Errorf("routing %q: ran %q, want %q", tt.saved, pl.Config.Routing, tt.want)
		}
	}
}
