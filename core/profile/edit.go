package profile

import "slices"

// The edits a front end asks for. Each keeps the document whole: what a
// removal leaves pointing at nothing is pruned (Prune), and an index out of
// range changes nothing (the list on screen may be older than the profile).

// Select makes node or group id the one a connection uses.
func (p *Profile) Select(id string) { p.Selected = id }

// RemoveGroup removes group id, and the references to it.
func (p *Profile) RemoveGroup(id string) {
	p.Groups = slices.DeleteFunc(p.Groups, func(g *Group) bool { return g.ID == id })
	p.Prune()
}

// MoveMember swaps members i and j of group id.
func (p *Profile) MoveMember(id string, i, j int) {
	g := p.Group(id)
	if g == nil || i < 0 || j < 0 || i >= len(g.Members) || j >= len(g.Members) {
		return
	}
	g.Members[i], g.Members[j] = g.Members[j], g.Members[i]
}

// RemoveSource removes subscription sub, its nodes and the groups its
// import made; sub "" removes the nodes added by hand and the groups
// Skiff made of them. A group of the user's that the removal leaves
// empty goes too, and so does a selection that pointed at what went.
func (p *Profile) RemoveSource(sub string) {
	if sub != "" {
		p.Subscriptions = slices.DeleteFunc(p.Subscriptions, func(s *Subscription) bool { return s.ID == sub })
	}
	p.Nodes = slices.DeleteFunc(p.Nodes, func(n *Node) bool { return n.Subscription == sub })
	p.Groups = slices.DeleteFunc(p.Groups, func(g *Group) bool {
		return g.Subscription == sub && (sub != "" || g.Origin == OriginAuto)
	})
	// A group emptied by the removal goes, and then a group that held
	// only it (at most as many rounds as there are groups).
	for range len(p.Groups) + 1 {
		had := map[string]bool{}
		for _, g := range p.Groups {
			had[g.ID] = len(g.Members) > 0
		}
		p.Prune()
		n := len(p.Groups)
		p.Groups = slices.DeleteFunc(p.Groups, func(g *Group) bool { return had[g.ID] && len(g.Members) == 0 })
		if len(p.Groups) == n {
			break
		}
	}
	p.Prune()
}

// AddRule adds r after the user's rules.
func (p *Profile) AddRule(r Rule) { p.Routes.Rules = append(p.Routes.Rules, r) }

// RemoveRule removes the user's rule i.
func (p *Profile) RemoveRule(i int) {
	if i >= 0 && i < len(p.Routes.Rules) {
		p.Routes.Rules = slices.Delete(p.Routes.Rules, i, i+1)
	}
}

// SetSubscriptionRules sets how the subscriptions' rules combine with the
// user's (SubRulesAfter, SubRulesFirst or SubRulesOff).
func (p *Profile) SetSubscriptionRules(mode string) { p.Routes.SubscriptionRules = mode }
