package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/internal/fetchguard"
	"github.com/skiffvpn/skiff/internal/sysdial"
)

// RuleSetState is one rule set of a run as the status shows it.
type RuleSetState struct {
	Name    string        `json:"name"`
	Stats   ruleset.Stats `json:"stats"`             // what the list in use holds
	Skipped int           `json:"skipped,omitempty"` // entries of it Skiff cannot express
	Updated time.Time     `json:"updated,omitzero"`  // when the list in use was downloaded; zero: none yet (it matches nothing)
	Checked time.Time     `json:"checked,omitzero"`  // the last download attempt
	Next    time.Time     `json:"next,omitzero"`     // the next one
	Err     string        `json:"error,omitempty"`   // why the last attempt failed; "" after a good one
	Source  string        `json:"source,omitempty"`  // "cache", "download" or "data"
	Format  string        `json:"format,omitempty"`
	Took    time.Duration `json:"took,omitempty"` // fetching and decoding the list in use
}

// Time limits of rule-set downloads.
const (
	// ruleSetStartTimeout bounds the downloads at Start of sets that have
	// no cached copy; the run starts without those that did not come.
	ruleSetStartTimeout = 30 * time.Second
	// ruleSetFetchTimeout bounds one download (direct or through the
	// proxy) while running.
	ruleSetFetchTimeout = 2 * time.Minute
	// ruleSetRetry is the first wait after a failed download; it doubles
	// with each failure in a row, up to the set's interval.
	ruleSetRetry = time.Minute
)

// ruleSets loads a run's rule sets and keeps them fresh: from the cache
// when it has them, else downloaded (direct, then through the proxy), and
// again every interval. A failed download keeps the list in use, says why
// in the state and the log, and is retried with back-off. apply gets every
// new collection of sets (a copy) to compile into the rules.
type ruleSets struct {
	cache ruleset.Cache
	srcs  []ruleset.Source
	log   *slog.Logger
	apply func(map[string]*ruleset.Set) error

	mu     sync.Mutex
	sets   map[string]*ruleset.Set
	states []RuleSetState // by index of srcs
	fails  []int
	wake   chan struct{} // Refresh asks the loop for an attempt now
	round  chan struct{} // closed (and replaced) when the loop ends a round of downloads
	ended  chan struct{} // closed when the loop returns
}

// newRuleSets returns the loader of cfg's rule sets, downloading through
// the direct target first and then the proxy target (when there is one).
func newRuleSets(cfg *Config, targets map[string]outbound.Outbound, log *slog.Logger) *ruleSets {
	// Direct, the service itself connects: only where fetchguard allows,
	// names resolved as the direct target resolves them. Through the
	// proxy, the server connects, from its own network.
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return sysdial.LookupNetIP(ctx, cfg.Dialer, "ip", host)
	}
	direct := fetchguard.Dial(outbound.HTTPDial(targets[TargetDirect], "rule-set dial"), lookup)
	fetch := []ruleset.FetchFunc{ruleset.HTTPFetch(fetchClient(direct))}
	if p := targets[TargetProxy]; p != nil {
		fetch = append(fetch, ruleset.HTTPFetch(fetchClient(outbound.HTTPDial(p, "rule-set dial"))))
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ruleSets{
		cache:  ruleset.Cache{Dir: cfg.RuleSetCache, Fetch: ruleset.FirstOf(fetch...)},
		srcs:   cfg.RuleSets,
		log:    log,
		sets:   map[string]*ruleset.Set{},
		states: make([]RuleSetState, len(cfg.RuleSets)),
		fails:  make([]int, len(cfg.RuleSets)),
		wake:   make(chan struct{}, 1),
		round:  make(chan struct{}),
		ended:  make(chan struct{}),
	}
}

// fetchClient is an HTTP client whose connections dial opens. No
// keep-alive: a connection one fetch opened is never another's.
func fetchClient(dial fetchguard.DialFunc) *http.Client {
	return &http.Client{
		Timeout: ruleSetFetchTimeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dial,
			ForceAttemptHTTP2:   true,
			TLSHandshakeTimeout: 15 * time.Second,
			MaxIdleConns:        -1,
			DisableKeepAlives:   true,
		},
	}
}

// load fills every set at Start: data sets are decoded (an error ends the
// start: it is the profile's own data), downloaded sets come from the
// cache whatever their age (a stale one is refreshed at once by run), and
// those not cached are downloaded, all at once, within
// ruleSetStartTimeout; the cached ones decode one per core at a time. A set whose download fails starts empty, with its
// error in the state, and is retried by run.
func (r *ruleSets) load(ctx context.Context) error {
	now := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(r.srcs))
	// Cached sets decode one per core at once (CPU work); the sets not
	// cached are all downloaded at once.
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, src := range r.srcs {
		if src.Name == "" {
			return fmt.Errorf("core: rule set %d: no name", i+1)
		}
		if _, dup := r.sets[src.Name]; dup {
			return fmt.Errorf("core: rule set %q: given twice", src.Name)
		}
		r.sets[src.Name] = ruleset.Empty()
		r.states[i].Name, r.states[i].Format = src.Name, src.Format
	}
	for i, src := range r.srcs {
		if src.URL == "" {
			t0 := time.Now()
			s, err := r.cache.Get(ctx, src, now)
			if err != nil {
				return fmt.Errorf("core: %w", err)
			}
			r.set(i, s, "data", now, time.Since(t0))
		}
	}
	for i := range r.srcs {
		src := r.srcs[i]
		st := &r.states[i]
		if src.URL == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			sem <- struct{}{}
			s, saved, err := r.cache.Load(src)
			<-sem
			if err == nil {
				r.set(i, s, "cache", saved, time.Since(t0))
				r.mu.Lock()
				st.Next = saved.Add(interval(&src))
				r.mu.Unlock()
				return
			}
			ctx, cancel := context.WithTimeout(ctx, ruleSetStartTimeout)
			defer cancel()
			errs[i] = r.update(ctx, i)
		}()
	}
	wg.Wait()
	releaseMemory()
	for i, err := range errs {
		if err != nil {
			r.log.Warn("core: rule set not loaded; it matches nothing until a download succeeds", "set", r.srcs[i].Name, "err", err)
		}
	}
	return nil
}

func interval(src *ruleset.Source) time.Duration {
	if src.Interval > 0 {
		return src.Interval
	}
	return ruleset.DefaultInterval
}

// set records s as set i's list.
func (r *ruleSets) set(i int, s *ruleset.Set, from string, updated time.Time, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sets[r.srcs[i].Name] = s
	st := &r.states[i]
	st.Stats, st.Skipped, st.Updated, st.Source, st.Took = s.Stats(), len(s.Skipped()), updated, from, took
}

// update downloads set i once and records the outcome. It does not apply
// the new list: the caller does.
func (r *ruleSets) update(ctx context.Context, i int) error {
	src := r.srcs[i]
	now := time.Now()
	if !src.Provided {
		ctx = fetchguard.Typed(ctx, src.URL)
	}
	s, err := r.cache.Update(ctx, src)
	took := time.Since(now)
	r.mu.Lock()
	st := &r.states[i]
	st.Checked = now
	if err != nil {
		r.fails[i]++
		st.Err = err.Error()
		st.Next = now.Add(min(ruleSetRetry<<min(r.fails[i]-1, 16), interval(&src)))
		r.mu.Unlock()
		return err
	}
	r.fails[i] = 0
	st.Err = ""
	st.Next = now.Add(interval(&src))
	r.mu.Unlock()
	r.set(i, s, "download", now, took)
	return nil
}

// snapshot returns a copy of the sets, for compiling rules over.
func (r *ruleSets) snapshot() map[string]*ruleset.Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.sets)
}

// State returns every set's state, in the configured order.
func (r *ruleSets) State() []RuleSetState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RuleSetState(nil), r.states...)
}

// refresh asks run for an attempt now at the downloaded sets named (none:
// every one) and waits until each was tried and the rules were rebuilt,
// or ctx ends. It returns the states then.
func (r *ruleSets) refresh(ctx context.Context, names []string) ([]RuleSetState, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	t0 := time.Now()
	var asked []int
	r.mu.Lock()
	for _, n := range names {
		found := false
		for i := range r.srcs {
			if r.srcs[i].Name != n {
				continue
			}
			found = true
			if r.srcs[i].URL == "" {
				r.mu.Unlock()
				return nil, fmt.Errorf("%w: rule set %q is data the profile holds, not a download (import the file again)", ErrRuleSetNoURL, n)
			}
		}
		if !found {
			r.mu.Unlock()
			return nil, fmt.Errorf("%w: %q", ErrNoRuleSet, n)
		}
	}
	for i := range r.srcs {
		if r.srcs[i].URL != "" && (len(want) == 0 || want[r.srcs[i].Name]) {
			r.states[i].Next = time.Time{}
			asked = append(asked, i)
		}
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	for {
		r.mu.Lock()
		done, round := true, r.round
		for _, i := range asked {
			if r.states[i].Checked.Before(t0) {
				done = false
			}
		}
		r.mu.Unlock()
		if done {
			return r.State(), nil
		}
		select {
		case <-ctx.Done():
			return r.State(), ctx.Err()
		case <-r.ended:
			return r.State(), fmt.Errorf("%w: the core stopped", ErrNoRuleSet)
		case <-round:
		}
	}
}

// run downloads each set when it is due, until ctx ends, and applies every
// list that changed.
func (r *ruleSets) run(ctx context.Context) {
	defer close(r.ended)
	for {
		next, due := r.due(time.Now())
		if len(due) > 0 {
			changed := false
			for _, i := range due {
				fctx, cancel := context.WithTimeout(ctx, ruleSetFetchTimeout)
				err := r.update(fctx, i)
				cancel()
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					r.log.Warn("core: rule set refresh failed; the rules keep the list they had", "set", r.srcs[i].Name, "err", err)
					continue
				}
				st := r.State()[i]
				r.log.Info("core: rule set updated", "set", st.Name, "domains", st.Stats.Domains, "ranges", st.Stats.Ranges)
				changed = true
			}
			if changed {
				if err := r.apply(r.snapshot()); err != nil {
					r.log.Error("core: rules not rebuilt after a rule-set update; the previous rules stay", "err", err)
				}
				releaseMemory()
			}
			r.mu.Lock()
			close(r.round)
			r.round = make(chan struct{})
			r.mu.Unlock()
			continue
		}
		if next.IsZero() {
			select {
			case <-ctx.Done():
				return
			case <-r.wake:
			}
			continue
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// due returns the downloaded sets due at now, and the earliest time one
// is due later (zero: none).
func (r *ruleSets) due(now time.Time) (next time.Time, due []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.srcs {
		if r.srcs[i].URL == "" {
			continue
		}
		n := r.states[i].Next
		if !n.After(now) {
			due = append(due, i)
			continue
		}
		if next.IsZero() || n.Before(next) {
			next = n
		}
	}
	return next, due
}

// releaseMemory returns the memory that decoding rule sets used and let go
// of (the inflated files and the lists they were sorted from: several
// times the tables kept) to the system at once: a load is a burst that the
// garbage collector would otherwise leave in the heap's high-water mark.
// Measured with make bench-rules (110k domains, 10k prefixes, medians of
// 5 starts): `skiff run` 26.8 MiB without it, 18.6 MiB with it.
func releaseMemory() { debug.FreeOSMemory() }

// Errors of Controller.RefreshRuleSets.
var (
	// ErrNoRuleSet: the core is stopped, runs without rule sets, or has
	// none of the name asked for.
	ErrNoRuleSet = errors.New("core: no such rule set in use")
	// ErrRuleSetNoURL: the set asked for is data in the profile (an
	// imported file): there is nothing to download.
	ErrRuleSetNoURL = errors.New("core: rule set has no URL")
)
