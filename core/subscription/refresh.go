package subscription

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

// Refresh defaults.
const (
	DefaultInterval  = 24 * time.Hour   // when neither the user nor the provider set one
	MinProviderEvery = 10 * time.Minute // a provider's interval is never taken below this
	DefaultRetryBase = time.Minute      // first retry after a failed refresh; doubles each time
	DefaultPoll      = time.Minute      // how often the Refresher looks for new subscriptions
)

// Apply makes res the node list of subscription sub in p, and its groups
// (ApplyGroups: the provider's, a fastest one, one failover group per
// server). Nodes keep their IDs across refreshes (profile.NodeID), so the
// user's renames carry over; group members and selections whose node is
// gone are pruned. The caller
// has checked that res holds nodes: an empty result must never reach here.
func Apply(p *profile.Profile, sub *profile.Subscription, res *Result, now time.Time) {
	old := make(map[string]*profile.Node)
	pos := -1
	kept := p.Nodes[:0:0]
	for _, n := range p.Nodes {
		if n.Subscription == sub.ID {
			old[n.ID] = n
			if pos < 0 {
				pos = len(kept)
			}
			continue
		}
		kept = append(kept, n)
	}
	fresh := makeNodes(sub.ID, res.Nodes, old, nil)
	if pos < 0 {
		pos = len(kept)
	}
	p.Nodes = append(kept[:pos:pos], append(fresh, kept[pos:]...)...)
	p.Prune()
	gw := ApplyGroups(p, sub.ID, res.Groups)
	applyRoutes(sub, res, fresh)

	sub.Format = string(res.Format)
	sub.Warnings = append(res.Warnings[:len(res.Warnings):len(res.Warnings)], gw...)
	sub.LastAttempt, sub.LastSuccess = now, now
	sub.LastError = ""
	sub.Failures = 0
	if res.UserInfo != nil {
		sub.UserInfo = res.UserInfo
	}
}

// FileSubscription returns the subscription that stands for the file
// named name (an import of a file, without a URL), adding it to p when it
// is new. Its ID derives from the name, so importing the file again
// replaces the same subscription's nodes.
func FileSubscription(p *profile.Profile, name string) (*profile.Subscription, bool) {
	h := sha256.Sum256([]byte("file\x00" + name))
	id := "f" + hex.EncodeToString(h[:6])
	if s := p.Subscription(id); s != nil {
		return s, false
	}
	s := &profile.Subscription{ID: id, Title: name}
	p.Subscriptions = append(p.Subscriptions, s)
	return s, true
}

// ApplyInfo records what the response headers said about sub.
func ApplyInfo(sub *profile.Subscription, info Info) {
	cleanInfo(&info)
	if info.Title != "" {
		sub.Title = info.Title
	}
	if info.WebPageURL != "" {
		sub.WebPageURL = info.WebPageURL
	}
	if info.UserInfo != nil {
		sub.UserInfo = info.UserInfo
	}
	if info.UpdateInterval > 0 {
		sub.UpdateInterval = profile.Duration(info.UpdateInterval)
	}
}

// AddNodes adds nodes imported by hand (from links or a file, not a
// subscription) to p, after the existing ones. A node already present (same
// ID) is left as it is. It returns how many were added.
func AddNodes(p *profile.Profile, nodes []*node.Node) int {
	existing := make(map[string]bool, len(p.Nodes))
	for _, n := range p.Nodes {
		existing[n.ID] = true
	}
	fresh := makeNodes("", nodes, nil, existing)
	p.Nodes = append(p.Nodes, fresh...)
	return len(fresh)
}

// makeNodes wraps parsed nodes for the profile. Two entries with the same
// identity get "-2", "-3"… suffixes in order. Renames come from old; IDs in
// skip are left out.
func makeNodes(source string, nodes []*node.Node, old map[string]*profile.Node, skip map[string]bool) []*profile.Node {
	out := make([]*profile.Node, 0, len(nodes))
	seen := make(map[string]int, len(nodes))
	for _, n := range nodes {
		id := profile.NodeID(source, n)
		seen[id]++
		if k := seen[id]; k > 1 {
			id += "-" + strconv.Itoa(k)
		}
		if skip[id] {
			continue
		}
		pn := &profile.Node{ID: id, Subscription: source, Config: *n}
		pn.Unsupported, pn.Lack = unusable(n)
		if o := old[id]; o != nil {
			pn.Rename = o.Rename
		}
		out = append(out, pn)
	}
	return out
}

// Refresh downloads and parses subscription id and stores the outcome. A
// good body replaces the subscription's nodes (see Apply). A failed fetch,
// an unreadable body or one without a single usable node leaves the nodes
// as they were and records the error on the subscription; the error is
// also returned. The Result is returned whenever the body was parsed, so
// callers can show its warnings.
func Refresh(ctx context.Context, store *profile.Store, f *Fetcher, id string) (*Result, error) {
	p, err := store.Load()
	if p == nil {
		return nil, err
	}
	sub := p.Subscription(id)
	if sub == nil {
		return nil, fmt.Errorf("subscription %s: not in the profile", id)
	}
	rawURL := sub.URL
	if f == nil {
		f = &Fetcher{}
	}
	var (
		res     *Result
		fetched *Fetched
	)
	fetched, err = f.Fetch(ctx, rawURL)
	if err == nil {
		res, err = Parse(fetched.Body)
		if err != nil {
			err = fmt.Errorf("subscription %s: %w", Redact(rawURL), err)
		}
	}
	now := time.Now().UTC()
	uerr := store.Update(func(p *profile.Profile) error {
		sub := p.Subscription(id)
		if sub == nil {
			return fmt.Errorf("subscription %s: removed during the refresh", id)
		}
		if sub.URL != rawURL {
			return fmt.Errorf("subscription %s: URL changed during the refresh", id)
		}
		if fetched != nil {
			ApplyInfo(sub, fetched.Info)
			if sub.Title == "" {
				sub.Title = hostOf(rawURL)
			}
		}
		if err != nil {
			sub.LastAttempt = now
			sub.LastError = err.Error()
			sub.Failures++
			return nil
		}
		Apply(p, sub, res, now)
		return nil
	})
	if err != nil {
		return res, err
	}
	return res, uerr
}

func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Interval is how often sub is refreshed: the user's interval for it, else
// the provider's (at least MinProviderEvery), else the profile's setting,
// else DefaultInterval.
func Interval(p *profile.Profile, sub *profile.Subscription) time.Duration {
	switch {
	case sub.UserInterval > 0:
		return time.Duration(sub.UserInterval)
	case sub.UpdateInterval > 0:
		return max(time.Duration(sub.UpdateInterval), MinProviderEvery)
	case p.Settings.RefreshInterval > 0:
		return time.Duration(p.Settings.RefreshInterval)
	}
	return DefaultInterval
}

// Refresher refreshes every subscription of a profile in the background, on
// each one's Interval with up to 10% jitter, and after a failure retries
// with exponential back-off starting at RetryBase (never later than the
// interval). Set the fields, then Start; Stop ends it.
type Refresher struct {
	Store     *profile.Store
	Fetcher   *Fetcher                                // nil: a default Fetcher
	RetryBase time.Duration                           // 0: DefaultRetryBase
	Poll      time.Duration                           // 0: DefaultPoll
	Logf      func(format string, args ...any)        // nil: no logging
	OnRefresh func(id string, res *Result, err error) // optional: called after each refresh

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start begins refreshing in a goroutine that Stop (or ctx) ends.
func (r *Refresher) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return errors.New("subscription: refresher already started")
	}
	if r.Store == nil {
		return errors.New("subscription: refresher without a store")
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go r.run(ctx, r.done)
	return nil
}

// Stop ends the refresher and waits for an ongoing refresh to give up.
func (r *Refresher) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Next returns when sub is due, given its last attempt and failures.
func (r *Refresher) Next(p *profile.Profile, sub *profile.Subscription) time.Time {
	if sub.LastAttempt.IsZero() {
		return time.Time{}
	}
	wait := Interval(p, sub)
	if sub.Failures > 0 {
		base := r.RetryBase
		if base <= 0 {
			base = DefaultRetryBase
		}
		back := base << min(sub.Failures-1, 20)
		if back > 0 && back < wait {
			wait = back
		}
	}
	// Deterministic jitter, so recomputing does not move the deadline.
	h := fnv.New64a()
	h.Write([]byte(sub.ID))
	h.Write([]byte(sub.LastAttempt.Format(time.RFC3339Nano)))
	frac := float64(h.Sum64()%1000) / 10000 // 0 to 10%
	return sub.LastAttempt.Add(wait + time.Duration(float64(wait)*frac))
}

func (r *Refresher) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	poll := r.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	retry := r.RetryBase
	if retry <= 0 {
		retry = DefaultRetryBase
	}
	tried := make(map[string]time.Time) // guards against a store that cannot record attempts
	for {
		wait := poll
		p, err := r.Store.Load()
		if p == nil {
			r.logf("subscription: loading the profile: %v", err)
		} else {
			now := time.Now()
			for _, sub := range p.Subscriptions {
				if sub.URL == "" {
					continue
				}
				due := r.Next(p, sub)
				if t, ok := tried[sub.ID]; ok && due.Before(t.Add(retry)) {
					due = t.Add(retry)
				}
				if d := due.Sub(now); d > 0 {
					wait = min(wait, d)
					continue
				}
				tried[sub.ID] = now
				res, err := Refresh(ctx, r.Store, r.Fetcher, sub.ID)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					r.logf("subscription %s (%s): refresh failed, keeping the last good nodes: %v", sub.ID, Redact(sub.URL), err)
				} else {
					r.logf("subscription %s (%s): %d nodes, %d skipped", sub.ID, Redact(sub.URL), len(res.Nodes), len(res.Warnings))
				}
				if r.OnRefresh != nil {
					r.OnRefresh(sub.ID, res, err)
				}
				wait = 0 // recompute with the stored outcome
			}
		}
		if wait == 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (r *Refresher) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}
