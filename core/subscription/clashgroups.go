package subscription

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/profile"
	"gopkg.in/yaml.v3"
)

// Group is a subscription's own proxy group (Clash proxy-groups), its
// members by name: proxies of the same document or other groups of it.
type Group struct {
	Name     string
	Type     string   // profile.GroupSelector, GroupURLTest or GroupFailover
	Members  []string // names, in the provider's order
	Default  string   // a selector's member to start on (sing-box "default"); "": the first
	ProbeURL string
	Interval time.Duration
	Line     int
}

// clashGroup is one entry of proxy-groups, with the fields Skiff maps.
type clashGroup struct {
	Name              string   `yaml:"name"`
	Type              string   `yaml:"type"`
	Proxies           []string `yaml:"proxies"`
	Use               []string `yaml:"use"`
	URL               string   `yaml:"url"`
	Interval          int      `yaml:"interval"` // seconds
	IncludeAll        bool     `yaml:"include-all"`
	IncludeAllProxies bool     `yaml:"include-all-proxies"`
	Filter            string   `yaml:"filter"`
	ExcludeFilter     string   `yaml:"exclude-filter"`
}

// clashGroupTypes maps Clash's group types to Skiff's. load-balance
// becomes url-test: Skiff does not spread one app's flows over several
// servers, so the group sends new flows to its fastest healthy member and
// moves on when that one fails, which is what a balanced group gives an
// app that opens one connection at a time.
var clashGroupTypes = map[string]string{
	"select":       profile.GroupSelector,
	"url-test":     profile.GroupURLTest,
	"fallback":     profile.GroupFailover,
	"load-balance": profile.GroupURLTest,
}

// clashBuiltins are proxy names Clash defines itself: not servers.
var clashBuiltins = map[string]bool{"DIRECT": true, "REJECT": true, "REJECT-DROP": true, "PASS": true, "COMPATIBLE": true, "GLOBAL": true}

// parseClashGroups maps a Clash document's proxy-groups. Every group's
// problem is a warning with its line; the nodes import whatever the
// groups hold.
func parseClashGroups(root *yaml.Node, res *Result) {
	groups := mapValue(root, "proxy-groups")
	if groups != nil && groups.Kind == yaml.AliasNode {
		groups = groups.Alias
	}
	if groups == nil || groups.Tag == "!!null" {
		return
	}
	if groups.Kind != yaml.SequenceNode {
		res.warn(groups.Line, "proxy-groups: not a list")
		return
	}
	budget := maxYAMLNodes
	if err := countYAML(groups, &budget, 0); err != nil {
		res.warn(groups.Line, "proxy-groups: "+err.Error())
		return
	}
	var all []string
	for _, n := range res.Nodes {
		all = append(all, n.Name)
	}
	warn := func(line int, format string, a ...any) {
		res.warn(line, fmt.Sprintf(format, a...))
	}
	seen := map[string]bool{}
	for _, entry := range groups.Content {
		var cg clashGroup
		if err := entry.Decode(&cg); err != nil {
			warn(entry.Line, "proxy group: %s", yamlReason(err))
			continue
		}
		typ, ok := clashGroupTypes[cg.Type]
		switch {
		case cg.Name == "":
			warn(entry.Line, "proxy group without a name")
			continue
		case seen[cg.Name]:
			warn(entry.Line, "proxy group %q: a second group of that name", cg.Name)
			continue
		case !ok:
			warn(entry.Line, "proxy group %q: type %q is not supported (select, url-test, fallback and load-balance are)", cg.Name, cg.Type)
			continue
		}
		seen[cg.Name] = true
		g := Group{Name: cg.Name, Type: typ, ProbeURL: cg.URL, Line: entry.Line}
		if cg.Interval > 0 {
			g.Interval = time.Duration(cg.Interval) * time.Second
		}
		for _, m := range cg.Proxies {
			if !clashBuiltins[m] {
				g.Members = append(g.Members, m)
			}
		}
		if cg.IncludeAll || cg.IncludeAllProxies {
			more, err := filterNames(all, cg.Filter, cg.ExcludeFilter)
			if err != nil {
				warn(entry.Line, "proxy group %q: %v", cg.Name, err)
			}
			g.Members = append(g.Members, more...)
		}
		if len(g.Members) == 0 {
			why := "no servers"
			if len(cg.Use) > 0 {
				why = "only proxy-providers (" + strings.Join(cg.Use, ", ") + "), which are not imported"
			}
			warn(entry.Line, "proxy group %q: %s", cg.Name, why)
			continue
		}
		res.Groups = append(res.Groups, g)
	}
}

// filterNames returns the names that match filter (all when empty) and
// not exclude. mihomo's filters are regular expressions; Go's syntax
// covers the ones subscriptions use ("(?i)hk|香港").
func filterNames(names []string, filter, exclude string) ([]string, error) {
	var in, out *regexp.Regexp
	var err error
	if filter != "" {
		if in, err = regexp.Compile(filter); err != nil {
			return nil, fmt.Errorf("filter: %v", err)
		}
	}
	if exclude != "" {
		if out, err = regexp.Compile(exclude); err != nil {
			return nil, fmt.Errorf("exclude-filter: %v", err)
		}
	}
	var got []string
	for _, n := range names {
		if (in == nil || in.MatchString(n)) && (out == nil || !out.MatchString(n)) {
			got = append(got, n)
		}
	}
	return got, nil
}
