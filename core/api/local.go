package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/core/subscription"
	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// Local is the Backend that runs the core in this process: the service's,
// and the window's when no service is installed. It owns the profile store
// and the subscription refresh schedule as well as the core.
type Local struct {
	ctrl    *core.Controller
	store   *profile.Store
	fetcher *subscription.Fetcher
	log     *slog.Logger

	profiles notifier // profile changes, to every watcher

	pmu sync.Mutex // serialises read-modify-write of the profile

	mu    sync.Mutex   // guards route and ref
	route *Route       // what the running Connect used
	req   plan.Request // what the running Connect asked
	ref   *subscription.Refresher

	killSwitch atomic.Bool // ApplyKillSwitch was called: the profile's setting is applied on every save
}

// NewLocal returns a Backend over ctrl and store; f fetches subscriptions
// (nil: the default Fetcher).
func NewLocal(ctrl *core.Controller, store *profile.Store, f *subscription.Fetcher) *Local {
	if f == nil {
		f = &subscription.Fetcher{}
	}
	return &Local{ctrl: ctrl, store: store, fetcher: f, log: ctrl.Logger()}
}

// Start starts the subscription refresh schedule; it runs until ctx ends or
// Close.
func (l *Local) Start(ctx context.Context) error {
	ref := &subscription.Refresher{
		Store:   l.store,
		Fetcher: l.fetcher,
		Logf:    func(format string, a ...any) { l.log.Info(fmt.Sprintf(format, a...)) },
		OnRefresh: func(string, *subscription.Result, error) {
			l.profileChanged()
		},
	}
	if err := ref.Start(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	l.ref = ref
	l.mu.Unlock()
	return nil
}

// Close stops the refresh schedule and the core (routes and DNS restored).
func (l *Local) Close() error {
	l.mu.Lock()
	ref := l.ref
	l.ref = nil
	l.mu.Unlock()
	if ref != nil {
		ref.Stop()
	}
	return l.ctrl.Stop()
}

// Controller returns the core this backend runs.
func (l *Local) Controller() *core.Controller { return l.ctrl }

// Connect implements Backend.
func (l *Local) Connect(ctx context.Context, r plan.Request) (*Route, error) {
	if err := r.Validate(); err != nil {
		return nil, errorf(CodeBadRequest, err.Error())
	}
	_, pl, err := l.plan(r)
	if err != nil {
		return nil, err
	}
	pl.Config.RuleSetCache = plan.RuleSetCache(l.store.Dir())
	rt := &Route{Name: pl.Name, GroupID: pl.GroupID, IDs: pl.IDs, Mode: plan.ModeProxy, Skipped: pl.Skipped, Targets: pl.Targets}
	if r.Mode != "" {
		rt.Mode = r.Mode // the session that asked for ModeSystemProxy reads it back from Status
	}
	l.mu.Lock()
	prev, prevReq := l.route, l.req
	l.route, l.req = rt, r
	l.mu.Unlock()
	if err := l.ctrl.Start(ctx, pl.Config); err != nil {
		l.mu.Lock()
		l.route, l.req = prev, prevReq
		l.mu.Unlock()
		return nil, Wrap(err)
	}
	// What was asked is kept for Resume; a failure to write it costs only
	// the reconnection at the next start.
	if err := l.remember(&r); err != nil {
		l.log.Warn("api: remembering the connection for the next start", "err", err)
	}
	return rt, nil
}

// Disconnect implements Backend. The user's disconnect is remembered: the
// next start does not reconnect (Resume).
func (l *Local) Disconnect(context.Context) error {
	err := l.ctrl.Stop()
	l.mu.Lock()
	l.route = nil
	l.mu.Unlock()
	if rerr := l.remember(nil); rerr != nil {
		l.log.Warn("api: forgetting the connection", "err", rerr)
	}
	if err != nil {
		return Wrap(err)
	}
	return nil
}

// ConnectionFile is the file beside the profile that holds the last
// Connect request while connected; an explicit Disconnect removes it. A
// stop of the process (the service stopping, a crash, a reboot) leaves it,
// so that Resume can connect again.
const ConnectionFile = "connection.json"

// remember writes r as the connection to restore, or removes the record
// when r is nil.
func (l *Local) remember(r *plan.Request) error {
	path := filepath.Join(l.store.Dir(), ConnectionFile)
	if r == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600)
}

// Resume connects as the last Connect did when the profile asks for it
// (Settings.ConnectAtStart) and the user had not disconnected since; the
// service calls it when it starts. It returns nil, nil when there is
// nothing to restore. A record that does not decode or validate is
// removed and reported.
func (l *Local) Resume(ctx context.Context) (*Route, error) {
	p, err := l.store.Load()
	if p == nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if !p.Settings.ConnectAtStart {
		return nil, nil
	}
	path := filepath.Join(l.store.Dir(), ConnectionFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("api: resume: %w", err)
	}
	var r plan.Request
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err = dec.Decode(&r)
	if err == nil {
		err = r.Validate()
	}
	if err != nil {
		l.remember(nil)
		return nil, fmt.Errorf("api: resume: %s: %w", path, err)
	}
	return l.Connect(ctx, r)
}

// Status implements Backend.
func (l *Local) Status(context.Context) (Status, error) { return l.status(l.ctrl.Status()), nil }

func (l *Local) status(st core.Status) Status {
	out := Status{State: st.State, Outbound: st.Outbound, Member: st.Member, Reason: st.Reason, Why: st.Why,
		Listen: st.Listen, TUN: st.TUN, Since: st.Since, RuleSets: l.ctrl.RuleSets()}
	if st.State == core.Failed {
		out.Error = &Error{Code: CodeOf(st.Cause), Message: st.Err}
	}
	if st.State == core.Running || st.State == core.Starting {
		l.mu.Lock()
		out.Route = l.route
		l.mu.Unlock()
	}
	return out
}

// Stats implements Backend.
func (l *Local) Stats(context.Context) (core.Snapshot, error) { return l.ctrl.Stats(), nil }

// Groups implements Backend.
func (l *Local) Groups(context.Context) ([]core.GroupState, error) { return l.ctrl.Groups(), nil }

// Connections implements Backend.
func (l *Local) Connections(context.Context) ([]stats.ConnInfo, error) {
	return l.ctrl.Connections(), nil
}

// CloseConnection implements Backend.
func (l *Local) CloseConnection(_ context.Context, id uint64) error {
	if !l.ctrl.CloseConnection(id) {
		return errorf(CodeNotFound, fmt.Sprintf("connection %d is not open", id))
	}
	return nil
}

// Logs implements Backend.
func (l *Local) Logs(context.Context) ([]core.LogRecord, error) { return l.ctrl.Logs(), nil }

// watchBuffer is how many notices a watcher may fall behind before it
// misses some (it then gets NoticeDropped and can read the state again).
const watchBuffer = 256

// Watch implements Backend.
func (l *Local) Watch(ctx context.Context, o WatchOptions) (<-chan Notice, error) {
	events, stopEvents := l.ctrl.Subscribe(64)
	var (
		logs     <-chan core.LogRecord
		stopLogs = func() {}
	)
	if o.Logs {
		logs, stopLogs = l.ctrl.SubscribeLogs(watchBuffer)
	}
	profiles, stopProfiles := l.profiles.subscribe()
	out := make(chan Notice, watchBuffer)
	st := l.status(l.ctrl.Status())
	out <- Notice{Kind: NoticeStatus, Time: time.Now(), Status: &st}
	go func() {
		defer close(out)
		defer stopEvents()
		defer stopLogs()
		defer stopProfiles()
		var tick <-chan time.Time
		if o.Stats {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			tick = t.C
		}
		dropped := false
		send := func(n Notice) {
			if dropped {
				select {
				case out <- Notice{Kind: NoticeDropped, Time: time.Now()}:
					dropped = false
				default:
					return
				}
			}
			select {
			case out <- n:
			default:
				dropped = true
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				send(l.notice(ev))
			case rec, ok := <-logs:
				if !ok {
					return
				}
				send(Notice{Kind: NoticeLog, Time: rec.Time, Log: &rec})
			case rev := <-profiles:
				send(Notice{Kind: NoticeProfile, Time: time.Now(), Profile: &ProfileRevision{Rev: rev}})
			case <-tick:
				s := l.ctrl.Stats()
				st := l.status(l.ctrl.Status())
				send(Notice{Kind: NoticeStats, Time: time.Now(), Stats: &s, Status: &st})
			}
		}
	}()
	return out, nil
}

// notice turns a core event into a Notice.
func (l *Local) notice(ev core.Event) Notice {
	st := l.status(ev.Status)
	if st.State == core.Running && st.Member == "" {
		// The event's status was taken before the group picked a member.
		st.Member = l.ctrl.Status().Member
	}
	n := Notice{Time: ev.Time, Status: &st, Message: ev.Message}
	switch ev.Kind {
	case core.EventSwitch:
		n.Kind, n.Switch = NoticeSwitch, ev.Switch
	case core.EventFlowFailed:
		n.Kind = NoticeFlowFailed
		n.Error = &Error{Code: CodeOf(ev.Err), Message: ev.Message}
	default:
		n.Kind = NoticeStatus
	}
	return n
}

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

// Import implements Backend.
func (l *Local) Import(ctx context.Context, r ImportRequest) (*ImportResult, error) {
	switch {
	case r.URL != "" && r.Body != "":
		return nil, errorf(CodeBadRequest, "import: give a URL or a body, not both")
	case r.URL != "":
		u, ok := subscription.NormalizeURL(r.URL)
		if !ok {
			return nil, errorf(CodeBadRequest, "import: not a subscription URL")
		}
		return l.importURL(ctx, u, r.Name)
	case r.Body != "":
		if len(r.Source) > 255 || strings.ContainsFunc(r.Source, func(c rune) bool { return c < ' ' || c == 0x7f }) {
			return nil, errorf(CodeBadRequest, "import: source: not a file name")
		}
		return l.importBody([]byte(r.Body), r.Source)
	}
	return nil, errorf(CodeBadRequest, "import: nothing to import")
}

func (l *Local) importBody(body []byte, source string) (*ImportResult, error) {
	res, err := subscription.Parse(body)
	out := result(res)
	if err != nil {
		return out, errorf(CodeBadRequest, "import: "+err.Error())
	}
	err = l.update(func(p *profile.Profile) error {
		if source == "" {
			out.Added = subscription.AddNodes(p, res.Nodes)
			return nil
		}
		sub, isNew := subscription.FileSubscription(p, source)
		before := map[string]bool{}
		for _, n := range p.Nodes {
			if n.Subscription == sub.ID {
				before[n.ID] = true
			}
		}
		subscription.Apply(p, sub, res, time.Now().UTC())
		for _, n := range p.Nodes {
			if n.Subscription == sub.ID && !before[n.ID] {
				out.Added++
			}
		}
		out.Subscription, out.Existing = sub.ID, !isNew
		return nil
	})
	if err != nil {
		return out, err
	}
	return out, nil
}

// importURL adds a subscription (or finds it by URL) and refreshes it. A new
// subscription whose first refresh fails is removed again.
func (l *Local) importURL(ctx context.Context, rawURL, name string) (*ImportResult, error) {
	var id string
	isNew := false
	err := l.update(func(p *profile.Profile) error {
		for _, s := range p.Subscriptions {
			if s.URL == rawURL {
				id = s.ID
				if name != "" {
					s.Name = name
				}
				return nil
			}
		}
		var b [6]byte
		rand.Read(b[:])
		id = "s" + hex.EncodeToString(b[:])
		isNew = true
		p.Subscriptions = append(p.Subscriptions, &profile.Subscription{ID: id, URL: rawURL, Name: name, Title: subscription.Redact(rawURL)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out, err := l.refresh(ctx, id)
	out.Existing = !isNew
	if err != nil && isNew {
		l.update(func(p *profile.Profile) error {
			subs := p.Subscriptions[:0]
			for _, s := range p.Subscriptions {
				if s.ID != id {
					subs = append(subs, s)
				}
			}
			p.Subscriptions = subs
			return nil
		})
		out.Subscription = ""
	}
	return out, err
}

// Refresh implements Backend.
func (l *Local) Refresh(ctx context.Context, id string) (*ImportResult, error) {
	p, err := l.store.Load()
	if p == nil {
		return nil, err
	}
	s := p.Subscription(id)
	if s == nil {
		return nil, errorf(CodeNotFound, "subscription "+id+": not in the profile")
	}
	if s.URL == "" {
		return nil, errorf(CodeBadRequest, "subscription "+s.DisplayName()+": imported from a file, it has no URL to refresh (import the file again)")
	}
	return l.refresh(ctx, id)
}

func (l *Local) refresh(ctx context.Context, id string) (*ImportResult, error) {
	l.pmu.Lock()
	res, err := subscription.Refresh(ctx, l.store, l.fetcher, id)
	l.pmu.Unlock()
	l.profileChanged()
	out := result(res)
	out.Subscription = id
	if err != nil {
		e := errorf(CodeSubscriptionFetch, err.Error())
		out.Error = e
		return out, e
	}
	return out, nil
}

// result summarises a parse.
func result(res *subscription.Result) *ImportResult {
	out := &ImportResult{}
	if res == nil {
		return out
	}
	out.Format = string(res.Format)
	out.Nodes = len(res.Nodes)
	for _, n := range res.Nodes {
		if ok, why := protocol.Supported(n); !ok {
			out.Unsupported = append(out.Unsupported, n.Name+": "+why)
		}
	}
	for _, w := range res.Warnings {
		out.Warnings = append(out.Warnings, w.String())
	}
	return out
}

// maxProbe bounds the nodes of one Probe call, and probeParallel how many
// are tested at once.
const (
	maxProbe      = 4096
	probeParallel = 8
)

// RefreshRuleSets implements Backend. The names are checked as the
// profile's are (at most plan.MaxRuleSets, each 1 to 128 bytes); the wait
// is bounded by ruleSetRefreshTimeout.
func (l *Local) RefreshRuleSets(ctx context.Context, names []string) ([]core.RuleSetState, error) {
	if err := checkRuleSetNames(names); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ruleSetRefreshTimeout)
	defer cancel()
	st, err := l.ctrl.RefreshRuleSets(ctx, names...)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		// Still downloading: the states say what came so far; the rest
		// shows in Status.RuleSets when it is done.
		return st, nil
	}
	if err != nil {
		return st, Wrap(err)
	}
	return st, nil
}

// checkRuleSetNames checks the names of a RefreshRuleSets call.
func checkRuleSetNames(names []string) error {
	if len(names) > plan.MaxRuleSets {
		return errorf(CodeBadRequest, fmt.Sprintf("rule sets: at most %d names at once", plan.MaxRuleSets))
	}
	for _, n := range names {
		if n == "" || len(n) > 128 {
			return errorf(CodeBadRequest, "rule sets: a name of 1 to 128 bytes is needed")
		}
	}
	return nil
}

// ruleSetRefreshTimeout bounds how long RefreshRuleSets waits for the
// downloads (each is bounded on its own by the core, at 2 min).
const ruleSetRefreshTimeout = 3 * time.Minute

// Probe implements Backend.
func (l *Local) Probe(ctx context.Context, ids []string) ([]ProbeResult, error) {
	if len(ids) > maxProbe {
		return nil, errorf(CodeBadRequest, fmt.Sprintf("probe: at most %d nodes at once", maxProbe))
	}
	p, err := l.store.Load()
	if p == nil {
		return nil, err
	}
	out := make([]ProbeResult, len(ids))
	sem := make(chan struct{}, probeParallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		out[i].ID = id
		n := p.Node(id)
		if n == nil {
			out[i].Error = errorf(CodeNotFound, "no node "+id)
			continue
		}
		if n.Unsupported != "" {
			out[i].Error = errorf(CodeBadRequest, n.Unsupported)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cfg := n.Config
			rtt, err := l.ctrl.Probe(ctx, &cfg, p.Settings.ProbeURL)
			if err != nil {
				out[i].Error = Wrap(err)
				out[i].Timeout = errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout")
				return
			}
			out[i].Latency = rtt
		}()
	}
	wg.Wait()
	return out, nil
}

// notifier fans profile revisions out to watchers; a watcher that has not
// read the last one gets only the newest.
type notifier struct {
	mu   sync.Mutex
	subs map[chan string]struct{}
}

func (n *notifier) subscribe() (<-chan string, func()) {
	ch := make(chan string, 1)
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[chan string]struct{}{}
	}
	n.subs[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs, ch)
		n.mu.Unlock()
	}
}

func (n *notifier) publish(rev string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select {
		case <-ch:
		default:
		}
		select {
		case ch <- rev:
		default:
		}
	}
}
