package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
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
		Listen: st.Listen, TUN: st.TUN, Routing: string(st.Routing), Since: st.Since, RuleSets: l.ctrl.RuleSets()}
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
