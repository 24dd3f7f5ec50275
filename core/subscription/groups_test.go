package subscription

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/profile"
)

// sameServerList offers hk.example.com over VLESS+WS+TLS, Hysteria2 and
// Trojan (in that order), jp.example.com over Hysteria2 only, and an
// unusable protocol for hk.
var sameServerList = strings.Join([]string{
	"vless://" + testUUID + "@HK.example.com:443?encryption=none&security=tls&sni=hk.example.com&type=ws&host=hk.example.com&path=%2Fws#🇭🇰 香港 WS 01",
	"hysteria2://pw@hk.example.com:443?sni=hk.example.com#🇭🇰 香港 Hy2 01",
	"trojan://pw@hk.example.com:8443?sni=hk.example.com#🇭🇰 香港 Trojan 01",
	"hysteria2://pw@jp.example.com:443?sni=jp.example.com#🇯🇵 日本 Hy2 01",
}, "\n")

// clashGroupsYAML has a provider's groups of every type Clash has, nested
// groups, built-in targets, a provider-only group, include-all with
// filters, a name that matches nothing, and a relay chain.
const clashGroupsYAML = `proxies:
  - {name: "HK Hy2", type: hysteria2, server: hk.example.com, port: 443, password: pw, sni: hk.example.com}
  - {name: "HK WS", type: vless, server: hk.example.com, port: 443, uuid: ` + testUUID + `, tls: true, network: ws, servername: hk.example.com, ws-opts: {path: /ws}}
  - {name: "JP Hy2", type: hysteria2, server: jp.example.com, port: 443, password: pw, sni: jp.example.com}
proxy-groups:
  - {name: "节点选择", type: select, proxies: ["自动选择", "故障转移", DIRECT, "HK Hy2", "JP Hy2"]}
  - {name: "自动选择", type: url-test, proxies: ["HK Hy2", "JP Hy2", "gone"], url: "http://cp.cloudflare.com/generate_204", interval: 300}
  - {name: "故障转移", type: fallback, proxies: ["HK Hy2", "HK WS"]}
  - {name: "均衡", type: load-balance, include-all: true, filter: "(?i)hk", strategy: round-robin}
  - {name: "Providers only", type: select, use: [remote]}
  - {name: "Chain", type: relay, proxies: ["HK Hy2", "JP Hy2"]}
  - {name: "Direct only", type: select, proxies: [DIRECT, REJECT]}
rules:
  - MATCH,节点选择
`

// groupView is a group as the tests compare it: members by node or group
// name.
type groupView struct {
	Name, Type, Origin string
	Members            []string
}

func viewGroups(p *profile.Profile) []groupView {
	var out []groupView
	for _, g := range p.Groups {
		v := groupView{Name: g.Name, Type: g.Type, Origin: g.Origin}
		for _, id := range g.Members {
			if n := p.Node(id); n != nil {
				v.Members = append(v.Members, n.Name())
			} else if sg := p.Group(id); sg != nil {
				v.Members = append(v.Members, "group:"+sg.Name)
			} else {
				v.Members = append(v.Members, "?"+id)
			}
		}
		out = append(out, v)
	}
	return out
}

// imported is a profile with one subscription whose body was body.
func imported(t *testing.T, body string) (*profile.Profile, *profile.Subscription) {
	t.Helper()
	res, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p := profile.New()
	sub := &profile.Subscription{ID: "s1", URL: "https://example.com/sub"}
	p.Subscriptions = []*profile.Subscription{sub}
	Apply(p, sub, res, time.Now())
	return p, sub
}

func TestImportMakesGroups(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		want  []groupView
		warns []string // substrings of the warnings about groups
	}{
		{
			name: "same server over several protocols",
			body: sameServerList,
			want: []groupView{
				{"Fastest", profile.GroupURLTest, profile.OriginAuto, []string{"🇭🇰 香港 WS 01", "🇭🇰 香港 Hy2 01", "🇭🇰 香港 Trojan 01", "🇯🇵 日本 Hy2 01"}},
				{"hk.example.com", profile.GroupFailover, profile.OriginAuto, []string{"🇭🇰 香港 Hy2 01", "🇭🇰 香港 WS 01", "🇭🇰 香港 Trojan 01"}},
			},
		},
		{
			name: "one server only",
			body: "hysteria2://pw@jp.example.com:443#only",
			want: nil,
		},
		{
			name: "the provider's groups (Clash proxy-groups)",
			body: clashGroupsYAML,
			want: []groupView{
				{"节点选择", profile.GroupSelector, profile.OriginProvider, []string{"group:自动选择", "group:故障转移", "HK Hy2", "JP Hy2"}},
				{"自动选择", profile.GroupURLTest, profile.OriginProvider, []string{"HK Hy2", "JP Hy2"}},
				{"故障转移", profile.GroupFailover, profile.OriginProvider, []string{"HK Hy2", "HK WS"}},
				{"均衡", profile.GroupURLTest, profile.OriginProvider, []string{"HK Hy2", "HK WS"}},
				{"Fastest", profile.GroupURLTest, profile.OriginAuto, []string{"HK Hy2", "HK WS", "JP Hy2"}},
				{"hk.example.com", profile.GroupFailover, profile.OriginAuto, []string{"HK Hy2", "HK WS"}},
			},
			warns: []string{`"Providers only": only proxy-providers (remote)`, `"Chain": type "relay" is not supported`, `"Direct only": no servers`, `"自动选择": no proxy or group named "gone"`},
		},
		{
			name: "the corpus's Clash document",
			body: clashYAML,
			want: []groupView{
				{"PROXY", profile.GroupSelector, profile.OriginProvider, []string{"🇺🇸 US Hysteria2", "日本 VLESS WS"}},
				{"Fastest", profile.GroupURLTest, profile.OriginAuto, nil}, // members checked below
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, sub := imported(t, tt.body)
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			got := viewGroups(p)
			if tt.name == "the corpus's Clash document" && len(got) > 1 {
				got[1].Members = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("groups\n%+v\nwant\n%+v", got, tt.want)
			}
			var all []string
			for _, w := range sub.Warnings {
				all = append(all, w.String())
			}
			for _, w := range tt.warns {
				if !strings.Contains(strings.Join(all, "\n"), w) {
					t.Errorf("no warning %q in %q", w, all)
				}
			}
		})
	}
}

// TestRefreshKeepsGroups: a refresh makes the groups again with the same
// IDs, keeps the selector's pick and the profile's selection, drops a
// group whose servers are gone, and leaves the user's own groups alone.
func TestRefreshKeepsGroups(t *testing.T) {
	p, sub := imported(t, clashGroupsYAML)
	sel, err := p.FindGroup("节点选择")
	if err != nil {
		t.Fatal(err)
	}
	auto, _ := p.FindGroup("自动选择")
	sel.Selected = auto.ID
	p.Selected = sel.ID
	mine := &profile.Group{ID: "mine", Name: "mine", Type: profile.GroupFailover, Members: []string{p.Nodes[2].ID}}
	p.Groups = append(p.Groups, mine)

	// The provider moves its WS node to another server.
	res2, err := Parse([]byte(strings.Replace(clashGroupsYAML, `name: "HK WS", type: vless, server: hk.example.com`, `name: "HK WS", type: vless, server: hk2.example.com`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	Apply(p, sub, res2, time.Now())
	sel2, err := p.FindGroup("节点选择")
	if err != nil || sel2.ID != sel.ID || sel2.Selected != auto.ID || p.Selected != sel.ID {
		t.Fatalf("after refresh: %+v %v, selection %s", sel2, err, p.Selected)
	}
	if g, _ := p.FindGroup("hk.example.com"); g != nil {
		t.Errorf("hk.example.com has one protocol left, its group stays: %+v", g)
	}
	if g, _ := p.FindGroup("故障转移"); g == nil || len(g.Members) != 2 {
		t.Errorf("the provider's fallback group after refresh: %+v", g)
	}
	if g := p.Group("mine"); g == nil || len(g.Members) != 1 {
		t.Errorf("the user's group after refresh: %+v", g)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestFileSubscription: a file's import is a subscription of its name;
// importing the same name again replaces its nodes.
func TestFileSubscription(t *testing.T) {
	p := profile.New()
	s, isNew := FileSubscription(p, "my-vpn.yaml")
	if !isNew || s.DisplayName() != "my-vpn.yaml" || s.URL != "" {
		t.Fatalf("%+v %v", s, isNew)
	}
	s2, isNew := FileSubscription(p, "my-vpn.yaml")
	if isNew || s2 != s || len(p.Subscriptions) != 1 {
		t.Fatalf("the same file again: %+v %v", s2, isNew)
	}
}

// TestSingBoxGroups: a sing-box document's selector and urltest outbounds
// are its groups; a member that is a direct outbound is no server and is
// left out quietly.
func TestSingBoxGroups(t *testing.T) {
	const doc = `{"outbounds": [
  {"type": "selector", "tag": "proxy", "outbounds": ["auto", "hy2", "direct"], "default": "hy2"},
  {"type": "urltest", "tag": "auto", "outbounds": ["hy2", "ws"], "url": "http://cp.cloudflare.com/generate_204", "interval": "5m"},
  {"type": "selector", "tag": "", "outbounds": ["hy2"]},
  {"type": "hysteria2", "tag": "hy2", "server": "hk.example.com", "server_port": 443, "password": "pw", "tls": {"enabled": true, "server_name": "hk.example.com"}},
  {"type": "vless", "tag": "ws", "server": "hk.example.com", "server_port": 443, "uuid": "` + testUUID + `", "tls": {"enabled": true, "server_name": "hk.example.com"}, "transport": {"type": "ws", "path": "/ws"}},
  {"type": "direct", "tag": "direct"}
]}`
	p, sub := imported(t, doc)
	got := viewGroups(p)
	want := []groupView{
		{"proxy", profile.GroupSelector, profile.OriginProvider, []string{"group:auto", "hy2"}},
		{"auto", profile.GroupURLTest, profile.OriginProvider, []string{"hy2", "ws"}},
		{"Fastest", profile.GroupURLTest, profile.OriginAuto, []string{"hy2", "ws"}},
		{"hk.example.com", profile.GroupFailover, profile.OriginAuto, []string{"hy2", "ws"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups\n%+v\nwant\n%+v", got, want)
	}
	// The selector starts on its default, as sing-box does.
	if g, _ := p.FindGroup("proxy"); g == nil || p.Node(g.Selected) == nil || p.Node(g.Selected).Name() != "hy2" {
		t.Errorf("selector's default: %+v", g)
	}
	if g, _ := p.FindGroup("auto"); g == nil || time.Duration(g.Interval) != 5*time.Minute || g.ProbeURL == "" {
		t.Errorf("urltest's probe: %+v", g)
	}
	all := ""
	for _, w := range sub.Warnings {
		all += w.String() + "\n"
	}
	if !strings.Contains(all, "a group needs a name") || strings.Contains(all, `"direct"`) {
		t.Errorf("warnings:\n%s", all)
	}
}

// TestRefreshKeepsUserEdits: what the user changed in a group Skiff made
// (its name, its members' order, a member taken out or added, its type and
// probe) survives refreshes, while the import's own changes (a new node,
// a node gone) still reach it; a group the user did not edit follows the
// import; a group saved before Skiff kept Made keeps its new name.
func TestRefreshKeepsUserEdits(t *testing.T) {
	p, sub := imported(t, sameServerList)
	hk := p.Group(profile.GroupID("s1", profile.OriginAuto, "hk.example.com"))
	fastest := p.Group(profile.GroupID("s1", profile.OriginAuto, FastestName))
	if hk == nil || fastest == nil || hk.Made == nil {
		t.Fatalf("groups after import: %+v", viewGroups(p))
	}
	byName := func(name string) string {
		for _, n := range p.Nodes {
			if n.Name() == name {
				return n.ID
			}
		}
		t.Fatalf("no node %q", name)
		return ""
	}
	// The user's edits: renamed, WS before Hysteria2, Trojan out, the
	// Japanese server added, another probe.
	hk.Name = "香港 (mine)"
	hk.Members = []string{byName("🇭🇰 香港 WS 01"), byName("🇭🇰 香港 Hy2 01"), byName("🇯🇵 日本 Hy2 01")}
	hk.ProbeURL = "https://example.com/204"
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	refresh := func(body string) {
		t.Helper()
		res, err := Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		Apply(p, sub, res, time.Now())
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	// The provider adds a TUIC node for hk.
	withTUIC := sameServerList + "\ntuic://" + testUUID + ":pw@hk.example.com:8443?sni=hk.example.com&congestion_control=bbr#🇭🇰 香港 TUIC 01"
	want := []groupView{
		{"Fastest", profile.GroupURLTest, profile.OriginAuto, []string{"🇭🇰 香港 WS 01", "🇭🇰 香港 Hy2 01", "🇭🇰 香港 Trojan 01", "🇯🇵 日本 Hy2 01", "🇭🇰 香港 TUIC 01"}},
		{"香港 (mine)", profile.GroupFailover, profile.OriginAuto, []string{"🇭🇰 香港 WS 01", "🇭🇰 香港 Hy2 01", "🇯🇵 日本 Hy2 01", "🇭🇰 香港 TUIC 01"}},
	}
	for range 2 { // the second refresh changes nothing
		refresh(withTUIC)
		if got := viewGroups(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("after refresh\n%+v\nwant\n%+v", got, want)
		}
		if g := p.Group(hk.ID); g.ProbeURL != "https://example.com/204" {
			t.Errorf("the user's probe URL was lost: %+v", g)
		}
	}
	// The provider drops the Hysteria2 node: it leaves the user's order.
	refresh(strings.Replace(withTUIC, "hysteria2://pw@hk.example.com:443?sni=hk.example.com#🇭🇰 香港 Hy2 01\n", "", 1))
	want = []groupView{
		{"Fastest", profile.GroupURLTest, profile.OriginAuto, []string{"🇭🇰 香港 WS 01", "🇭🇰 香港 Trojan 01", "🇯🇵 日本 Hy2 01", "🇭🇰 香港 TUIC 01"}},
		{"香港 (mine)", profile.GroupFailover, profile.OriginAuto, []string{"🇭🇰 香港 WS 01", "🇯🇵 日本 Hy2 01", "🇭🇰 香港 TUIC 01"}},
	}
	if got := viewGroups(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the provider dropped a node\n%+v\nwant\n%+v", got, want)
	}

	// A group saved before Made: its name is kept, its members follow the
	// import.
	p2, sub2 := imported(t, sameServerList)
	old := p2.Group(profile.GroupID("s1", profile.OriginAuto, "hk.example.com"))
	old.Made, old.Name = nil, "renamed before"
	old.Members = old.Members[:1]
	res, err := Parse([]byte(sameServerList))
	if err != nil {
		t.Fatal(err)
	}
	Apply(p2, sub2, res, time.Now())
	if g := p2.Group(old.ID); g == nil || g.Name != "renamed before" || len(g.Members) != 3 || g.Made == nil {
		t.Errorf("a group from before Made after refresh: %+v", g)
	}
}
