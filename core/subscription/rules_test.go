package subscription

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestClashRulesCorpus imports the rules of a provider's Clash config:
// every rule is used or greyed with its reason, the counts are the
// corpus's, targets map to nodes, groups, direct and block, and the whole
// plans into a run.
func TestClashRulesCorpus(t *testing.T) {
	body, err := os.ReadFile("testdata/clash-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Routes
	if r == nil {
		t.Fatal("no routes imported")
	}
	used, greyedRules := len(r.Rules), 0
	for _, g := range r.Greyed {
		if !strings.HasPrefix(g.Rule, "rule-provider ") {
			greyedRules++
		}
		if g.Reason == "" {
			t.Errorf("greyed %q has no reason", g.Rule)
		}
	}
	t.Logf("Clash corpus: %d rules, %d used, %d greyed, final %q; %d rule sets, %d providers greyed", r.Total, used, greyedRules, r.Final, len(r.RuleSets), len(r.Greyed)-greyedRules)
	for _, g := range r.Greyed {
		t.Logf("  greyed: %s — %s", g.Rule, g.Reason)
	}
	// 33 rules: 19 used, 13 greyed, MATCH as the final.
	if r.Total != 33 || used != 19 || greyedRules != 13 || used+greyedRules+1 != r.Total {
		t.Errorf("total %d, used %d, greyed %d; want 33, 19, 13 (and MATCH)", r.Total, used, greyedRules)
	}
	want := map[string]string{ // rule value → target
		"ad.example.com": "block",   // a selector starting on REJECT
		"google.com":     "🚀 Proxy", // a group, by name
		"youtube.com":    "JP 01",   // a node, by name (Apply makes it the ID)
		"cn":             "direct",  // a selector starting on DIRECT
		"Telegram":       "🚀 Proxy",
		"/usr/bin/wget":  "direct",
		"25":             "block",
	}
	for _, rule := range r.Rules {
		if w, ok := want[first(rule.Values)]; ok && rule.Target != w {
			t.Errorf("%s %v → %q, want %q", rule.Type, rule.Values, rule.Target, w)
		}
	}
	if r.Final != "🐟 Final" {
		t.Errorf("final %q", r.Final)
	}
	for _, g := range []string{"DOMAIN-REGEX", "SRC-IP-CIDR", "mrs", "type: file", "AND,", "No Such Group", "missing", "not-a-range"} {
		found := false
		for _, x := range r.Greyed {
			found = found || strings.Contains(x.Rule+" "+x.Reason, g)
		}
		if !found {
			t.Errorf("nothing greyed says %q", g)
		}
	}

	// Applied to a profile and planned: node targets are IDs, the rule
	// sets are the subscription's, and the user's choice orders them.
	p := profile.New()
	sub := &profile.Subscription{ID: "s1", URL: "https://provider.example/sub"}
	p.Subscriptions = []*profile.Subscription{sub}
	Apply(p, sub, res, time.Now())
	var jp string
	for _, n := range p.Nodes {
		if n.Config.Name == "JP 01" {
			jp = n.ID
		}
	}
	found := false
	for _, rule := range sub.Routes.Rules {
		found = found || (first(rule.Values) == "youtube.com" && rule.Target == jp)
	}
	if !found {
		t.Errorf("the youtube.com rule does not target JP 01's ID %s", jp)
	}
	p.Routes.Rules = []profile.Rule{{Type: "domain_suffix", Values: []string{"mine.example"}, Target: "block"}}
	for _, mode := range []string{profile.SubRulesAfter, profile.SubRulesFirst, profile.SubRulesOff} {
		p.Routes.SubscriptionRules = mode
		pl, err := plan.Build(p, plan.Request{})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		rules := pl.Config.Rules
		switch mode {
		case profile.SubRulesOff:
			if len(rules) != 1 || len(pl.Config.RuleSets) != 0 {
				t.Errorf("off: %d rules, %d sets", len(rules), len(pl.Config.RuleSets))
			}
		case profile.SubRulesAfter:
			if len(rules) != 20 || first(rules[0].DomainSuffix) != "mine.example" {
				t.Errorf("after: %d rules, first %+v", len(rules), rules[0])
			}
		case profile.SubRulesFirst:
			if len(rules) != 20 || first(rules[19].DomainSuffix) != "mine.example" || rules[0].Target != "block" {
				t.Errorf("first: %d rules, last %+v", len(rules), rules[len(rules)-1])
			}
		}
		for _, rs := range pl.Config.RuleSets {
			if !strings.HasPrefix(rs.Name, "s1/") {
				t.Errorf("%s: rule set named %q, want the subscription's prefix", mode, rs.Name)
			}
		}
	}
}

// TestSingBoxRules imports a sing-box config's route: rules, rule sets
// (remote, inline, local), actions and the final outbound.
func TestSingBoxRules(t *testing.T) {
	body := `{
  "outbounds": [
    {"type": "selector", "tag": "proxy", "outbounds": ["auto", "hk"], "default": "auto"},
    {"type": "urltest", "tag": "auto", "outbounds": ["hk"]},
    {"type": "trojan", "tag": "hk", "server": "hk.example.net", "server_port": 443, "password": "pw", "tls": {"enabled": true}},
    {"type": "direct", "tag": "direct-out"},
    {"type": "block", "tag": "block-out"}
  ],
  "route": {
    "rule_set": [
      {"tag": "geosite-cn", "type": "remote", "format": "binary", "url": "https://cdn.example.org/geosite-cn.srs", "update_interval": "1d"},
      {"tag": "mine", "type": "inline", "rules": [{"domain_suffix": ["mine.example"]}]},
      {"tag": "disk", "type": "local", "format": "binary", "path": "/etc/sing-box/disk.srs"}
    ],
    "rules": [
      {"action": "sniff"},
      {"protocol": "dns", "action": "hijack-dns"},
      {"ip_is_private": true, "outbound": "direct-out"},
      {"rule_set": "geosite-cn", "outbound": "direct-out"},
      {"rule_set": ["mine"], "domain_suffix": ["b.example"], "outbound": "hk"},
      {"rule_set": "disk", "outbound": "direct-out"},
      {"domain_suffix": ["ads.example"], "action": "reject"},
      {"port": [25], "outbound": "block-out"},
      {"domain": ["x.example"], "port": [443], "outbound": "proxy"},
      {"geosite": ["netflix"], "outbound": "proxy"},
      {"process_name": ["curl"], "outbound": "direct-out"},
      {"source_ip_cidr": ["10.0.0.0/8"], "outbound": "direct-out"}
    ],
    "final": "proxy"
  }
}`
	res, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Routes
	if r == nil {
		t.Fatal("no routes")
	}
	for _, g := range r.Greyed {
		t.Logf("greyed: %s — %s", g.Rule, g.Reason)
	}
	// 12 rules: sniff, hijack-dns, the local set's, the AND of domain and
	// port and the source rule are greyed; 7 used (one as two profile
	// rules); the local set is greyed too, and geosite netflix becomes
	// SagerNet's public set.
	if r.Total != 12 || len(r.Greyed) != 6 || len(r.Rules) != 8 || len(r.RuleSets) != 3 || r.Final != "proxy" {
		t.Errorf("total %d greyed %d rules %d sets %d final %q", r.Total, len(r.Greyed), len(r.Rules), len(r.RuleSets), r.Final)
	}
	want := []string{"private direct", "rule_set direct", "domain_suffix hk", "rule_set hk", "domain_suffix block", "port block", "rule_set proxy", "process direct"}
	for i, rule := range r.Rules {
		if got := rule.Type + " " + rule.Target; i < len(want) && got != want[i] {
			t.Errorf("rule %d: %s, want %s", i, got, want[i])
		}
	}
	if r.RuleSets[0].Interval != profile.Duration(24*time.Hour) || !strings.Contains(string(r.RuleSets[1].Data), "mine.example") {
		t.Errorf("rule sets %+v", r.RuleSets)
	}
}

// TestGeoSetURLs: a subscription's GEOIP and GEOSITE conditions download
// public rule sets that exist (checked against the file lists of
// SagerNet's sing-geoip and sing-geosite rule-set branches and MetaCubeX's
// meta-rules-dat): a country from sing-geoip, a list that is no country
// from meta-rules-dat, v2fly's lists from sing-geosite, and gfw, which
// sing-geosite holds only as gfw.report, as the gfwlist.
func TestGeoSetURLs(t *testing.T) {
	body := `proxies:
  - {name: "HK", type: trojan, server: hk.example.net, port: 443, password: pw}
rules:
  - GEOIP,CN,DIRECT,no-resolve
  - GEOIP,telegram,HK
  - GEOIP,LAN,DIRECT
  - GEOSITE,geolocation-!cn,HK
  - GEOSITE,google@cn,DIRECT
  - GEOSITE,GFW,HK
  - MATCH,HK
`
	res, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rs := range res.Routes.RuleSets {
		got[rs.Name] = rs.URL
	}
	want := map[string]string{
		"geoip-cn":                "https://raw.githubusercontent.com/SagerNet/sing-geoip/rule-set/geoip-cn.srs",
		"geoip-telegram":          "https://raw.githubusercontent.com/MetaCubeX/meta-rules-dat/sing/geo/geoip/telegram.srs",
		"geosite-geolocation-!cn": "https://raw.githubusercontent.com/SagerNet/sing-geosite/rule-set/geosite-geolocation-!cn.srs",
		"geosite-google@cn":       "https://raw.githubusercontent.com/SagerNet/sing-geosite/rule-set/geosite-google@cn.srs",
		"geosite-gfw":             preset.GeositeGFWURL,
	}
	if len(got) != len(want) {
		t.Errorf("rule sets %v, want %v (GEOIP,LAN is the private rule)", got, want)
	}
	for name, u := range want {
		if got[name] != u {
			t.Errorf("%s from %q, want %q", name, got[name], u)
		}
	}
	// sing-box's own geoip and geosite fields take the same sets.
	res, err = Parse([]byte(`{"outbounds": [{"type": "direct", "tag": "d"}, {"type": "trojan", "tag": "hk", "server": "hk.example.net", "server_port": 443, "password": "pw"}],
  "route": {"rules": [{"geoip": ["netflix", "us"], "outbound": "hk"}], "final": "d"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range res.Routes.RuleSets {
		got[rs.Name] = rs.URL
	}
	if got["geoip-netflix"] != "https://raw.githubusercontent.com/MetaCubeX/meta-rules-dat/sing/geo/geoip/netflix.srs" || got["geoip-us"] != "https://raw.githubusercontent.com/SagerNet/sing-geoip/rule-set/geoip-us.srs" {
		t.Errorf("sing-box geoip sets %v", got)
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// FuzzClashRules feeds rules: lines and rule-providers to the Clash rule
// reader: it never panics, and every rule is used, greyed or the final.
func FuzzClashRules(f *testing.F) {
	f.Add("DOMAIN-SUFFIX,a.example,G", "G", "{type: inline, behavior: classical, payload: [DOMAIN,a]}")
	f.Add("GEOIP,CN,DIRECT,no-resolve", "DIRECT", "{type: http, behavior: domain, url: 'https://x/'}")
	f.Add("RULE-SET,p,G", "N", "{type: file, behavior: ipcidr}")
	f.Add("AND,((DOMAIN,a)),REJECT", "REJECT", "{}")
	f.Fuzz(func(t *testing.T, line, member, provider string) {
		doc := "proxies:\n  - {name: N, type: trojan, server: a.example, port: 1, password: p}\n" +
			"proxy-groups:\n  - {name: G, type: select, proxies: [" + strconv.Quote(member) + "]}\n" +
			"rule-providers:\n  p: " + provider + "\nrules:\n  - " + strconv.Quote(line) + "\n  - MATCH,G\n"
		res, err := Parse([]byte(doc))
		if err != nil || res.Routes == nil {
			return
		}
		r := res.Routes
		n := len(r.Greyed)
		for _, g := range r.Greyed {
			if strings.HasPrefix(g.Rule, "rule-provider ") {
				n--
			}
		}
		if r.Total != 2 || n > 1 {
			t.Fatalf("total %d, %d greyed rules", r.Total, n)
		}
	})
}

// FuzzSingBoxRoute feeds route objects to the sing-box rule reader.
func FuzzSingBoxRoute(f *testing.F) {
	f.Add(`{"rules":[{"domain":"a","outbound":"d"}],"final":"d"}`)
	f.Add(`{"rule_set":[{"tag":"x","type":"inline","rules":[{"ip_cidr":["1.0.0.0/8"]}]}],"rules":[{"rule_set":"x","port_range":["1:9"],"outbound":"d"}]}`)
	f.Add(`{"rules":[{"action":"reject","geosite":"cn"},{"geoip":["private"],"outbound":"hk"}]}`)
	f.Fuzz(func(t *testing.T, route string) {
		body := `{"outbounds":[{"type":"trojan","tag":"hk","server":"a.example","server_port":1,"password":"p"},{"type":"direct","tag":"d"}],"route":` + route + `}`
		res := &Result{}
		parseSingBoxRules([]byte(body), res)
		if res.Routes != nil && len(res.Routes.Rules) > 0 {
			if _, err := plan.Rules(res.Routes.Rules, nil); err != nil {
				// Mapped rules may still be refused by the plan (a bad
				// port range); that is a clear error, not a panic.
				return
			}
		}
	})
}
