package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// revision is the saved profile's revision: a hash of the file (cheaper
// than encoding the document again; "" when there is none yet).
func (l *Local) revision() string {
	b, err := os.ReadFile(l.store.Path())
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// Profile implements Backend.
func (l *Local) Profile(context.Context) (*profile.Profile, string, error) {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	p, err := l.store.Load()
	if p == nil {
		return nil, "", fmt.Errorf("profile: %w", err)
	}
	return p, l.revision(), nil
}

// SetProfile implements Backend.
func (l *Local) SetProfile(_ context.Context, p *profile.Profile, rev string) error {
	if p == nil {
		return errorf(CodeBadRequest, "profile: missing")
	}
	if err := CheckProfile(p); err != nil {
		return errorf(CodeBadRequest, err.Error())
	}
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if rev != "" {
		if l.revision() != rev {
			return errorf(CodeConflict, "profile: changed by another client; read it again")
		}
	}
	if err := l.store.Save(p); err != nil {
		return err
	}
	l.profileChanged()
	if l.killSwitch.Load() {
		if err := l.ApplyKillSwitch(); err != nil {
			return err
		}
	}
	return nil
}

// ApplyKillSwitch puts the saved profile's kill switch in force, or removes
// it when the setting is off, and from then on again whenever the profile
// is saved. The service calls it when it starts, before anything connects,
// so that the kill switch holds from boot and after a crash.
func (l *Local) ApplyKillSwitch() error {
	l.killSwitch.Store(true)
	p, err := l.store.Load()
	if p == nil {
		return fmt.Errorf("profile: %w", err)
	}
	tc := plan.TUN(p.Settings.TUN)
	if err := core.ApplyKillSwitch(&tc, "", nil, l.log); err != nil {
		return fmt.Errorf("kill switch: %w", err)
	}
	return nil
}

// update changes the saved profile under the profile lock and tells the
// watchers.
func (l *Local) update(fn func(*profile.Profile) error) error {
	l.pmu.Lock()
	err := l.store.Update(fn)
	l.pmu.Unlock()
	if err == nil {
		l.profileChanged()
		if l.killSwitch.Load() {
			err = l.ApplyKillSwitch()
		}
	}
	return err
}

func (l *Local) profileChanged() { l.profiles.publish(l.revision()) }

// subscriptionRulesMax bounds a subscription's rules as a client sends them.
const subscriptionRulesMax = 100_000

// CheckProfile checks a profile a client sent: the references between its
// parts, every node's configuration, every subscription's URL, and the
// lengths of its texts.
func CheckProfile(p *profile.Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	for _, s := range p.Subscriptions {
		if s.URL == "" {
			continue // imported from a file: nothing to fetch
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("subscription %s: not an http(s) URL", s.ID)
		}
	}
	for _, n := range p.Nodes {
		if err := n.Config.Validate(); err != nil {
			return fmt.Errorf("node %s: %w", n.ID, err)
		}
	}
	for _, r := range p.Routes.Rules {
		if len(r.Values) > 1<<16 {
			return fmt.Errorf("rule %s: too many values", r.Type)
		}
	}
	if err := plan.CheckRoutes(&p.Routes); err != nil {
		return err
	}
	if _, err := core.ParseRouting(p.Routing); err != nil {
		return err
	}
	switch p.Routes.SubscriptionRules {
	case "", profile.SubRulesAfter, profile.SubRulesFirst, profile.SubRulesOff:
	default:
		return fmt.Errorf("routes: subscriptionRules %q is not %s, %s or %s", p.Routes.SubscriptionRules, profile.SubRulesAfter, profile.SubRulesFirst, profile.SubRulesOff)
	}
	for _, s := range p.Subscriptions {
		if s.Routes == nil {
			continue
		}
		if len(s.Routes.Rules)+len(s.Routes.Greyed) > 2*subscriptionRulesMax {
			return fmt.Errorf("subscription %s: too many rules", s.ID)
		}
		if err := plan.CheckRoutes(&profile.Routes{Rules: s.Routes.Rules, RuleSets: s.Routes.RuleSets}); err != nil {
			return fmt.Errorf("subscription %s: %w", s.ID, err)
		}
	}
	if _, err := plan.Rules(p.Routes.Rules, nil); err != nil {
		return err
	}
	if err := plan.CheckProxy(p.Settings.Proxy); err != nil {
		return err
	}
	return plan.CheckTUN(p.Settings.TUN)
}
