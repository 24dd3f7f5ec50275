package subscription

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/safetext"
)

// evil is a node name that clears the screen, rings, retitles the
// terminal, opens an 8-bit CSI and reverses the text after it.
const (
	evil      = "\x1b[2J\a\x1b]0;owned\a\u009b31m\u202eJP 01"
	evilClean = "[2J]0;owned31mJP 01"
)

func TestImportRemovesControls(t *testing.T) {
	yamlEvil := `"\e[2J\a\e]0;owned\a\x9b31m\u202eJP 01"`
	jsonEvil, _ := json.Marshal(evil)
	link := "trojan://secret@jp.example.com:443?sni=jp.example.com#" + url.PathEscape(evil)
	for _, tc := range []struct {
		format Format
		body   string
	}{
		{FormatBase64, base64.StdEncoding.EncodeToString([]byte(link + "\nhy2://pw@hk.example.com:443#HK\n"))},
		{FormatClash, `proxies:
  - {name: ` + yamlEvil + `, type: trojan, server: jp.example.com, port: 443, password: secret}
  - {name: HK, type: hysteria2, server: hk.example.com, port: 443, password: pw}
proxy-groups:
  - {name: "\e[31mPick\u2066", type: select, proxies: [` + yamlEvil + `, HK]}
rule-providers:
  "ads\a": {type: http, behavior: domain, url: "https://example.com/ads.yaml"}
rules:
  - "DOMAIN-SUFFIX,jp.example,\e[2J\a\e]0;owned\a\x9b31m\u202eJP 01"
  - "RULE-SET,ads\a,REJECT"
  - "MATCH,\e[31mPick\u2066"
`},
		{FormatSingBox, `{"outbounds": [
  {"type": "selector", "tag": "\u001b[31mPick\u2066", "outbounds": [` + string(jsonEvil) + `, "HK"]},
  {"type": "trojan", "tag": ` + string(jsonEvil) + `, "server": "jp.example.com", "server_port": 443, "password": "secret"},
  {"type": "hysteria2", "tag": "HK", "server": "hk.example.com", "server_port": 443, "password": "pw"}],
 "route": {"rules": [{"domain_suffix": ["jp.example"], "outbound": ` + string(jsonEvil) + `}], "final": "\u001b[31mPick\u2066"}}`},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			p, sub := imported(t, tc.body)
			if sub.Format != string(tc.format) {
				t.Fatalf("format %s, want %s", sub.Format, tc.format)
			}
			ApplyInfo(sub, Info{Title: "\x1b]0;x\aMy \u202eVPN", WebPageURL: "https://example.com/\x1b[0m"})
			if got := p.Nodes[0].Name(); got != evilClean {
				t.Errorf("node name %q, want %q", got, evilClean)
			}
			if sub.Title != "]0;xMy VPN" || sub.WebPageURL != "https://example.com/[0m" {
				t.Errorf("title %q, page %q", sub.Title, sub.WebPageURL)
			}
			if tc.format != FormatBase64 {
				// The names groups and rules refer by are cleaned alike:
				// the provider's group still holds the node.
				want := groupView{"[31mPick", profile.GroupSelector, profile.OriginProvider, []string{evilClean, "HK"}}
				if got := viewGroups(p)[0]; !reflect.DeepEqual(got, want) {
					t.Errorf("group %+v, want %+v", got, want)
				}
				if r := sub.Routes; r == nil || len(r.Rules) == 0 || r.Rules[0].Target != p.Nodes[0].ID {
					t.Errorf("rule target is not the node: %+v", sub.Routes)
				}
			}
			forbiddenIn(t, p)
		})
	}
}

// forbiddenIn fails when any string in v, as the profile saves it,
// holds a forbidden rune.
func forbiddenIn(t *testing.T, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if strings.ContainsFunc(v, safetext.Forbidden) {
				t.Errorf("saved string %q holds a control or bidi rune", v)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				walk(k)
				walk(e)
			}
		}
	}
	walk(doc)
}
