// Package preset holds the routing presets a user picks in one click —
// everything through the proxy, bypass mainland China, proxy only listed
// sites — as the profile rules and rule sets they expand to. A preset is
// only a starting point: the expansion is written into the profile, shown
// rule by rule in the window and editable there; nothing else refers to a
// preset by name.
//
// The rule sets are the well-known public ones, fetched by the user's
// machine: SagerNet's sing-geosite and sing-geoip rule-set branches
// (binary .srs, built daily from v2fly's domain-list-community and
// MaxMind-style country data) for mainland China, and MetaCubeX's
// meta-rules-dat for the GFW list (built from Loyalsoldier's
// v2ray-rules-dat, whose "gfw" is the gfwlist: v2fly's own "gfw" list is
// only the domain gfw.report, so SagerNet's geosite-gfw is not that list).
package preset

import (
	"fmt"
	"slices"
	"time"

	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/ruleset"
)

// Preset names.
const (
	Everything  = "everything"   // all but LAN and private destinations through the proxy
	BypassCN    = "bypass-cn"    // mainland China's sites and addresses direct, the rest through the proxy
	ProxyListed = "proxy-listed" // only listed (GFW-list) sites through the proxy, the rest direct
)

// Public rule sets the presets use.
const (
	GeositeCNURL  = "https://raw.githubusercontent.com/SagerNet/sing-geosite/rule-set/geosite-cn.srs"
	GeoIPCNURL    = "https://raw.githubusercontent.com/SagerNet/sing-geoip/rule-set/geoip-cn.srs"
	GeositeGFWURL = "https://raw.githubusercontent.com/MetaCubeX/meta-rules-dat/sing/geo/geosite/gfw.srs"
)

// retired maps the URLs earlier presets wrote to the ones that replace
// them: SagerNet's geosite-gfw, which holds gfw.report alone.
var retired = map[string]string{
	"https://raw.githubusercontent.com/SagerNet/sing-geosite/rule-set/geosite-gfw.srs": GeositeGFWURL,
}

// Current returns the URL a rule set at url is downloaded from: url, or
// what replaced it when an earlier preset wrote a list that turned out
// wrong. A profile keeps what it was saved with; the plan downloads from
// Current.
func Current(url string) string {
	if u, ok := retired[url]; ok {
		return u
	}
	return url
}

// The profile's targets the presets use: the core's own names
// (core.TargetDirect, core.TargetProxy; the test checks they agree). Not
// imported, so that this package stays data and does not link the core.
const (
	targetDirect = "direct"
	targetProxy  = "proxy"
)

// Interval is how often the presets' rule sets are downloaded again (the
// lists are rebuilt about daily).
const Interval = 24 * time.Hour

// Preset is one preset as the window lists it.
type Preset struct {
	Name  string
	Title string
	About string
}

// List returns the presets in the order the window offers them.
func List() []Preset {
	return []Preset{
		{Everything, "Everything through the proxy", "LAN and private addresses go direct, everything else through the proxy."},
		{BypassCN, "Bypass mainland China", "Sites and addresses in mainland China (geosite-cn, geoip-cn) go direct, the rest through the proxy."},
		{ProxyListed, "Proxy only listed sites", "Only sites on the GFW list (geosite-gfw) go through the proxy, the rest direct."},
	}
}

// Routes returns the routes preset name expands to. sub says how a
// subscription's own rules combine with them (profile.SubRules*); it is
// kept as given.
func Routes(name, sub string) (profile.Routes, error) {
	lan := profile.Rule{Type: "private", Values: []string{}, Target: targetDirect}
	r := profile.Routes{Preset: name, SubscriptionRules: sub}
	set := func(name, url string) profile.RuleSet {
		return profile.RuleSet{Name: name, URL: url, Format: ruleset.FormatSingBox, Interval: profile.Duration(Interval)}
	}
	switch name {
	case Everything:
		r.Rules = []profile.Rule{lan}
		r.Final = targetProxy
	case BypassCN:
		r.RuleSets = []profile.RuleSet{set("geosite-cn", GeositeCNURL), set("geoip-cn", GeoIPCNURL)}
		r.Rules = []profile.Rule{
			lan,
			{Type: "rule_set", Values: []string{"geosite-cn"}, Target: targetDirect},
			{Type: "rule_set", Values: []string{"geoip-cn"}, Target: targetDirect},
		}
		r.Final = targetProxy
	case ProxyListed:
		r.RuleSets = []profile.RuleSet{set("geosite-gfw", GeositeGFWURL)}
		r.Rules = []profile.Rule{
			lan,
			{Type: "rule_set", Values: []string{"geosite-gfw"}, Target: targetProxy},
		}
		r.Final = targetDirect
	default:
		return r, fmt.Errorf("preset: %q is not %s, %s or %s", name, Everything, BypassCN, ProxyListed)
	}
	return r, nil
}

// Which returns the preset whose expansion routes are, rules and rule sets
// alike, or "" when the user changed them (or they never came from one).
func Which(routes *profile.Routes) string {
	for _, p := range List() {
		want, _ := Routes(p.Name, routes.SubscriptionRules)
		if slices.EqualFunc(want.Rules, routes.Rules, equalRule) &&
			slices.EqualFunc(want.RuleSets, routes.RuleSets, equalSet) && want.Final == routes.Final {
			return p.Name
		}
	}
	return ""
}

func equalRule(a, b profile.Rule) bool {
	return a.Type == b.Type && a.Target == b.Target && slices.Equal(a.Values, b.Values)
}

func equalSet(a, b profile.RuleSet) bool {
	return a.Name == b.Name && Current(a.URL) == Current(b.URL) && a.Format == b.Format && a.Interval == b.Interval && string(a.Data) == string(b.Data)
}
