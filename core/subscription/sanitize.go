package subscription

import "github.com/skiffvpn/skiff/internal/safetext"

// clean passes every string of res that people are shown through
// safetext.Clean: node and group names, the names groups and rules refer
// by, rule-set names, greyed rules and warnings. Names and the references
// to them are cleaned alike, so they still match. Every format goes
// through Parse, so this is the one place a provider's text is made safe
// to show (share links are cleaned by link.Parse already; Clean is
// idempotent).
func (res *Result) clean() {
	c := safetext.Clean
	for _, n := range res.Nodes {
		if n.Name = c(n.Name); n.Name == "" {
			n.Name = n.Address()
		}
	}
	for i := range res.Groups {
		g := &res.Groups[i]
		g.Name, g.Default = c(g.Name), c(g.Default)
		cleanAll(g.Members)
	}
	for i := range res.Warnings {
		res.Warnings[i].Reason = c(res.Warnings[i].Reason)
	}
	if r := res.Routes; r != nil {
		r.Final = c(r.Final)
		for i := range r.Rules {
			r.Rules[i].Target = c(r.Rules[i].Target)
			cleanAll(r.Rules[i].Values)
		}
		for i := range r.RuleSets {
			r.RuleSets[i].Name = c(r.RuleSets[i].Name)
		}
		for i := range r.Greyed {
			r.Greyed[i].Rule, r.Greyed[i].Reason = c(r.Greyed[i].Rule), c(r.Greyed[i].Reason)
		}
	}
}

func cleanAll(s []string) {
	for i := range s {
		s[i] = safetext.Clean(s[i])
	}
}

// cleanInfo is clean for what a provider's response headers say.
func cleanInfo(info *Info) {
	info.Title = safetext.Clean(info.Title)
	info.WebPageURL = safetext.Clean(info.WebPageURL)
}
