package plan

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
)

// Combined is the routes a run uses: the user's and, as
// Routes.SubscriptionRules says, the route's subscription's own.
type Combined struct {
	Rules    []profile.Rule
	RuleSets []profile.RuleSet
	Final    string
	// Skipped says why the subscription's rules were left out, if they
	// were for a reason other than the user's choice.
	Skipped string
	// Provided names the rule sets the subscription brought: their URLs
	// are the provider's, not typed by the user (ruleset.Source.Provided).
	Provided map[string]bool
}

// Routes combines the user's routes with sub's own rules (sub may be nil).
// The subscription's rule sets are renamed "<subscription ID>/<name>" so
// that they never meet the user's names, except that one with the URL and
// format of a user's set is that set (downloaded and held once).
// SubRulesAfter: the user's rules, the subscription's, the user's final;
// SubRulesFirst: the subscription's rules, the user's, the subscription's
// final (else the user's).
func Routes(p *profile.Profile, sub *profile.Subscription) (*Combined, error) {
	if err := CheckRoutes(&p.Routes); err != nil {
		return nil, err
	}
	user := &p.Routes
	c := &Combined{Rules: user.Rules, RuleSets: user.RuleSets, Final: user.Final}
	if sub == nil || sub.Routes == nil || user.SubscriptionRules == profile.SubRulesOff {
		return c, nil
	}
	sr := sub.Routes
	if err := CheckRoutes(&profile.Routes{Rules: sr.Rules, RuleSets: sr.RuleSets}); err != nil {
		c.Skipped = "the rules of subscription " + sub.DisplayName() + ": " + err.Error()
		return c, nil
	}
	if _, err := Rules(sr.Rules, nil); err != nil {
		c.Skipped = "the rules of subscription " + sub.DisplayName() + ": " + err.Error()
		return c, nil
	}
	names := map[string]string{}
	c.RuleSets = slices.Clone(user.RuleSets)
	for _, rs := range sr.RuleSets {
		name := sub.ID + "/" + rs.Name
		for _, u := range user.RuleSets {
			if rs.URL != "" && u.URL == rs.URL && u.Format == rs.Format {
				name = u.Name
			}
		}
		names[rs.Name] = name
		if name != sub.ID+"/"+rs.Name {
			continue
		}
		rs.Name = name
		c.RuleSets = append(c.RuleSets, rs)
		if c.Provided == nil {
			c.Provided = map[string]bool{}
		}
		c.Provided[name] = true
	}
	var theirs []profile.Rule
	for _, r := range sr.Rules {
		if r.Type == "rule_set" {
			vals := make([]string, len(r.Values))
			for i, v := range r.Values {
				vals[i] = names[v]
			}
			r.Values = vals
		}
		theirs = append(theirs, r)
	}
	if user.SubscriptionRules == profile.SubRulesFirst {
		c.Rules = append(theirs, user.Rules...)
		if sr.Final != "" {
			c.Final = sr.Final
		}
	} else {
		c.Rules = append(slices.Clone(user.Rules), theirs...)
	}
	return c, nil
}

// Limits of a profile's rule sets.
const (
	MaxRuleSets        = 64
	MaxRuleSetData     = 4 << 20 // an imported file; larger lists are downloaded
	MinRuleSetInterval = time.Minute
)

// CheckRoutes checks the routes' rule sets (a name, one URL or data, a
// known format) and that every rule_set rule names one of them.
func CheckRoutes(r *profile.Routes) error {
	if len(r.RuleSets) > MaxRuleSets {
		return fmt.Errorf("rule sets: %d, at most %d", len(r.RuleSets), MaxRuleSets)
	}
	names := map[string]bool{}
	for i, rs := range r.RuleSets {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("rule set %d (%s): %s", i+1, rs.Name, fmt.Sprintf(format, a...))
		}
		switch {
		case strings.TrimSpace(rs.Name) == "" || len(rs.Name) > 128:
			return bad("a name of 1 to 128 bytes is needed")
		case names[rs.Name]:
			return bad("the name is used twice")
		case rs.URL != "" && len(rs.Data) > 0:
			return bad("give a URL or data, not both")
		case rs.URL == "" && len(rs.Data) == 0:
			return bad("no URL and no data")
		case len(rs.Data) > MaxRuleSetData:
			return bad("%d bytes of data, at most %d: serve it at a URL", len(rs.Data), MaxRuleSetData)
		case rs.Interval != 0 && time.Duration(rs.Interval) < MinRuleSetInterval:
			return bad("an interval of %s, at least %s", time.Duration(rs.Interval), MinRuleSetInterval)
		}
		if rs.URL != "" {
			u, err := url.Parse(rs.URL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(rs.URL) > 4096 {
				return bad("not an http(s) URL")
			}
		}
		if err := ruleset.CheckFormat(rs.Format); err != nil {
			return bad("%v", err)
		}
		names[rs.Name] = true
	}
	for i, pr := range r.Rules {
		if pr.Type != "rule_set" {
			continue
		}
		if len(pr.Values) == 0 {
			return fmt.Errorf("rule %d (rule_set): names no rule set", i+1)
		}
		for _, v := range pr.Values {
			if !names[v] {
				return fmt.Errorf("rule %d (rule_set): %q is not one of the rule sets", i+1, v)
			}
		}
	}
	return nil
}

// RuleSetCache is where a run keeps the rule sets it downloads, for the
// profile kept in dir: beside it, so that they survive restarts.
func RuleSetCache(dir string) string { return filepath.Join(dir, "rulesets") }

// RuleSets turns the profile's rule sets into the core's sources (a URL an
// earlier preset wrote and that was replaced is downloaded from its
// replacement, preset.Current).
func RuleSets(in []profile.RuleSet) []ruleset.Source {
	var out []ruleset.Source
	for _, rs := range in {
		out = append(out, ruleset.Source{Name: rs.Name, URL: preset.Current(rs.URL), Data: rs.Data, Format: rs.Format, Interval: time.Duration(rs.Interval)})
	}
	return out
}

// Rules turns the profile's rules into the core's, with their targets
// turned into the core's by target (nil: direct and block stay, anything
// else is the run's proxy target).
func Rules(in []profile.Rule, target func(string) string) ([]rule.Rule, error) {
	if target == nil {
		target = func(t string) string {
			if t == core.TargetDirect || t == core.TargetBlock {
				return t
			}
			return core.TargetProxy
		}
	}
	out := make([]rule.Rule, 0, len(in))
	for i, pr := range in {
		r := rule.Rule{Target: target(pr.Target)}
		bad := func(err error) error {
			return fmt.Errorf("rule %d (%s): %w", i+1, pr.Type, err)
		}
		switch pr.Type {
		case "domain":
			r.Domain = pr.Values
		case "domain_suffix":
			r.DomainSuffix = pr.Values
		case "domain_keyword":
			r.DomainKeyword = pr.Values
		case "ip_cidr":
			for _, v := range pr.Values {
				pfx, err := netip.ParsePrefix(v)
				if err != nil {
					a, aerr := netip.ParseAddr(v)
					if aerr != nil {
						return nil, bad(fmt.Errorf("%q is not an address or range", v))
					}
					pfx = netip.PrefixFrom(a, a.BitLen())
				}
				r.IPCIDR = append(r.IPCIDR, pfx)
			}
		case "port":
			ps, err := rule.ParsePorts(strings.Join(pr.Values, ","))
			if err != nil {
				return nil, bad(err)
			}
			r.Ports = ps
		case "network":
			if len(pr.Values) > 0 {
				r.Network = pr.Values[0]
			}
		case "private":
			r.Private = true
		case "rule_set":
			r.RuleSet = pr.Values
		case "process":
			r.Process = pr.Values
		default:
			return nil, bad(errors.New("unknown rule type"))
		}
		out = append(out, r)
	}
	return out, nil
}
