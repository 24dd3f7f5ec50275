package subscription

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

// The groups an import makes by itself, so that a first run has failover
// without a trip to Routes:
//
//   - the provider's own groups (Clash proxy-groups), by their names, so
//     that the provider's rules can name them;
//   - "Fastest": an url-test group over every usable node of the source;
//   - one failover group per server (same host) offered over several
//     protocols, in node.Node.FailoverRank's order: Hysteria2 first, then
//     VLESS+WS+TLS, then the other protocols.
//
// A refresh makes them again from the new nodes (their IDs are stable:
// profile.GroupID), and keeps what the user changed in them since the
// last import (a new name, the members' order, a member taken out or
// added, the type, the probe): see keepEdits. The user's own groups are
// never touched.

// FastestName is the name of the url-test group over all nodes.
const FastestName = "Fastest"

// AutoGroups returns the groups Skiff makes from the usable nodes of a
// source (a subscription ID, "" for the nodes imported by hand).
func AutoGroups(p *profile.Profile, source string) []*profile.Group {
	var usable []*profile.Node
	type host struct {
		name  string
		nodes []*profile.Node
	}
	var hosts []*host
	byHost := map[string]*host{}
	for _, n := range p.Nodes {
		if n.Subscription != source || n.Unsupported != "" {
			continue
		}
		usable = append(usable, n)
		k := strings.ToLower(n.Config.Server)
		h := byHost[k]
		if h == nil {
			h = &host{name: k}
			byHost[k] = h
			hosts = append(hosts, h)
		}
		h.nodes = append(h.nodes, n)
	}
	// A server the user grouped already (Routes' "Make failover groups"
	// of earlier versions made such groups) keeps the user's group only.
	covered := map[string]bool{}
	for _, g := range p.Groups {
		if g.Origin == profile.OriginUser && g.Type == profile.GroupFailover {
			for _, m := range g.Members {
				covered[m] = true
			}
		}
	}
	var out []*profile.Group
	if len(usable) > 1 {
		g := autoGroup(source, FastestName, profile.GroupURLTest)
		for _, n := range usable {
			g.Members = append(g.Members, n.ID)
		}
		out = append(out, g)
	}
	for _, h := range hosts {
		if len(h.nodes) < 2 || covered[h.nodes[0].ID] {
			continue
		}
		sort.SliceStable(h.nodes, func(i, j int) bool {
			return h.nodes[i].Config.FailoverRank() < h.nodes[j].Config.FailoverRank()
		})
		g := autoGroup(source, h.name, profile.GroupFailover)
		for _, n := range h.nodes {
			g.Members = append(g.Members, n.ID)
		}
		out = append(out, g)
	}
	return out
}

func autoGroup(source, name, typ string) *profile.Group {
	return &profile.Group{ID: profile.GroupID(source, profile.OriginAuto, name), Name: name, Type: typ,
		Subscription: source, Origin: profile.OriginAuto}
}

// ProviderGroups maps a subscription's own groups onto its nodes in p:
// members by name, a node's name first, then a group's. Members that name
// nothing are left out with a warning; a group left with no member is
// dropped with one.
func ProviderGroups(p *profile.Profile, source string, specs []Group) ([]*profile.Group, []profile.Warning) {
	nodes := map[string]string{} // name → ID, the first of that name
	info := map[string]bool{}    // the provider's information lines: in no group
	for _, n := range p.Nodes {
		if n.Subscription == source && n.Lack != nil && n.Lack.Feature == node.FeatureInfo {
			info[n.Config.Name] = true
			continue
		}
		if n.Subscription == source {
			if _, dup := nodes[n.Config.Name]; !dup {
				nodes[n.Config.Name] = n.ID
			}
		}
	}
	var warns []profile.Warning
	groups := map[string]string{}
	named := specs[:0:0]
	for _, s := range specs {
		if s.Name == "" || groups[s.Name] != "" {
			warns = append(warns, profile.Warning{Line: s.Line, Reason: fmt.Sprintf("group %q: left out, a group needs a name of its own", s.Name)})
			continue
		}
		groups[s.Name] = profile.GroupID(source, profile.OriginProvider, s.Name)
		named = append(named, s)
	}
	var out []*profile.Group
	for _, s := range named {
		g := &profile.Group{ID: groups[s.Name], Name: s.Name, Type: s.Type, Subscription: source,
			Origin: profile.OriginProvider, ProbeURL: s.ProbeURL, Interval: profile.Duration(s.Interval)}
		var missing []string
		seen := map[string]bool{}
		for _, m := range s.Members {
			if info[m] {
				continue
			}
			id := nodes[m]
			if id == "" {
				id = groups[m]
			}
			switch {
			case id == "" || id == g.ID:
				missing = append(missing, m)
			case !seen[id]:
				seen[id] = true
				g.Members = append(g.Members, id)
			}
			if m == s.Default && g.Type == profile.GroupSelector && id != "" && id != g.ID {
				g.Selected = id // the provider's pick; ApplyGroups keeps the user's over it
			}
		}
		if len(missing) > 0 {
			warns = append(warns, profile.Warning{Line: s.Line, Reason: fmt.Sprintf("proxy group %q: no proxy or group named %s", s.Name, quoteList(missing))})
		}
		if len(g.Members) == 0 {
			warns = append(warns, profile.Warning{Line: s.Line, Reason: fmt.Sprintf("proxy group %q: left out, none of its members could be imported", s.Name)})
			continue
		}
		out = append(out, g)
	}
	return out, warns
}

func quoteList(s []string) string {
	const most = 5
	q := make([]string, 0, most)
	for i, x := range s {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(s)-most))
			break
		}
		q = append(q, fmt.Sprintf("%q", x))
	}
	return strings.Join(q, ", ")
}

// ApplyGroups replaces the groups that imports made for source with fresh
// ones: the provider's (specs), then Skiff's. They go where the old ones
// were (else after the existing groups); a selector keeps the member the
// user picked when it is still a member. The user's groups stay as they
// are.
func ApplyGroups(p *profile.Profile, source string, specs []Group) []profile.Warning {
	provider, warns := ProviderGroups(p, source, specs)
	fresh := append(provider, AutoGroups(p, source)...)
	old := map[string]*profile.Group{}
	pos := -1
	kept := p.Groups[:0:0]
	for _, g := range p.Groups {
		if g.Subscription == source && g.Origin != profile.OriginUser {
			old[g.ID] = g
			if pos < 0 {
				pos = len(kept)
			}
			continue
		}
		kept = append(kept, g)
	}
	for _, g := range fresh {
		made := g.Shape()
		if o := old[g.ID]; o != nil {
			keepEdits(g, o)
			if o.Selected != "" && contains(g.Members, o.Selected) {
				g.Selected = o.Selected
			}
		}
		g.Made = &made
	}
	if pos < 0 {
		pos = len(kept)
	}
	p.Groups = append(kept[:pos:pos], append(fresh, kept[pos:]...)...)
	p.Prune()
	return warns
}

// keepEdits puts into fresh, a group as an import makes it now, what the
// user changed in old, the same group as it is in the profile, since the
// import made it (old.Made). Members: the user's order and removals stay,
// members the user added stay, members the import no longer makes go, and
// members the import makes anew join at the end. A group from before
// Skiff kept Made has its name kept only.
func keepEdits(fresh, old *profile.Group) {
	made := old.Made
	if made == nil {
		legacy := old.Shape()
		legacy.Name = fresh.Name
		made = &legacy
	}
	if old.Name != made.Name {
		fresh.Name = old.Name
	}
	if old.Type != made.Type {
		fresh.Type = old.Type
	}
	if old.ProbeURL != made.ProbeURL {
		fresh.ProbeURL = old.ProbeURL
	}
	if old.Interval != made.Interval {
		fresh.Interval = old.Interval
	}
	if slices.Equal(old.Members, made.Members) {
		return
	}
	wasMade := map[string]bool{}
	for _, m := range made.Members {
		wasMade[m] = true
	}
	var members []string
	for _, m := range old.Members {
		if !wasMade[m] || contains(fresh.Members, m) {
			members = append(members, m) // the user's, or made still
		}
	}
	for _, m := range fresh.Members {
		if !wasMade[m] && !contains(members, m) {
			members = append(members, m) // new from this import
		}
	}
	fresh.Members = members
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
