package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// SelectRequest is a user's pick: ID (a node's or a group's) becomes the
// profile's selection, or, with Group, the chosen member of the select
// group Group.
type SelectRequest struct {
	Group string `json:"group,omitempty"` // a selector group's ID; "": the profile's selection
	ID    string `json:"id"`              // the node or group picked
}

// SelectResult says how a pick took effect.
type SelectResult struct {
	// Live: the core is connected and new flows go to the pick now; the
	// open ones stay where they are, unless Settings.CloseOnSwitch.
	Live bool `json:"live,omitempty"`
	// Closed is how many open flows were closed because they were on the
	// old pick (Settings.CloseOnSwitch).
	Closed int `json:"closed,omitempty"`
	// Reconnected: the pick could not be made live (in TUN mode, a
	// server the tunnel was not opened for) and the core connected again;
	// Reason says why.
	Reconnected bool   `json:"reconnected,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// maxIDLen bounds the IDs of a SelectRequest (the profile's are 17 bytes).
const maxIDLen = 128

// Select implements Backend: the pick is saved, and applied at once when
// connected (core.Controller.Reselect): new flows go to it, the open ones
// stay or close as Settings.CloseOnSwitch says. The run's rules stay as
// connected.
func (l *Local) Select(ctx context.Context, r SelectRequest) (*SelectResult, error) {
	if r.ID == "" || len(r.ID) > maxIDLen || len(r.Group) > maxIDLen {
		return nil, errorf(CodeBadRequest, "select: an id of 1 to 128 bytes is needed")
	}
	err := l.update(func(p *profile.Profile) error { return applySelect(p, r) })
	if err != nil {
		return nil, err
	}
	if l.ctrl.Status().State != core.Running {
		return &SelectResult{}, nil
	}
	l.mu.Lock()
	req, connected := l.req, l.route != nil
	l.mu.Unlock()
	if !connected {
		return &SelectResult{}, nil
	}
	if r.Group == "" && req.Target != "" {
		req.Target = r.ID // the connection named its route: the pick replaces it
	}
	p, pl, err := l.plan(req)
	if err != nil {
		return nil, err
	}
	closed, err := l.ctrl.Reselect(pl.Config, p.Settings.CloseOnSwitch)
	if errors.Is(err, core.ErrNeedsReconnect) {
		if derr := l.ctrl.Stop(); derr != nil {
			return nil, Wrap(derr)
		}
		if _, cerr := l.Connect(ctx, req); cerr != nil {
			return nil, cerr
		}
		return &SelectResult{Live: true, Reconnected: true, Reason: err.Error()}, nil
	}
	if err != nil {
		return nil, Wrap(err)
	}
	l.mu.Lock()
	if l.route != nil {
		rt := *l.route
		rt.Name, rt.GroupID, rt.IDs, rt.Skipped = pl.Name, pl.GroupID, pl.IDs, pl.Skipped
		l.route = &rt
	}
	l.mu.Unlock()
	if req.Target != "" {
		l.mu.Lock()
		l.req = req
		l.mu.Unlock()
		if err := l.remember(&req); err != nil {
			l.log.Warn("api: remembering the connection for the next start", "err", err)
		}
	}
	l.profileChanged()
	return &SelectResult{Live: true, Closed: closed}, nil
}

// plan builds r over the saved profile, its errors typed.
func (l *Local) plan(r plan.Request) (*profile.Profile, *plan.Plan, error) {
	p, err := l.store.Load()
	if p == nil {
		return nil, nil, fmt.Errorf("profile: %w", err)
	}
	pl, err := plan.Build(p, r)
	if err != nil {
		if errors.Is(err, plan.ErrNoServer) {
			return nil, nil, errorf(CodeNoServer, err.Error())
		}
		return nil, nil, errorf(CodeBadRequest, err.Error())
	}
	return p, pl, nil
}

// applySelect records pick r in p.
func applySelect(p *profile.Profile, r SelectRequest) error {
	if r.Group == "" {
		if p.Node(r.ID) == nil && p.Group(r.ID) == nil {
			return errorf(CodeNotFound, "select: no node or group "+r.ID)
		}
		p.Select(r.ID)
		return nil
	}
	g := p.Group(r.Group)
	if g == nil {
		return errorf(CodeNotFound, "select: no group "+r.Group)
	}
	if g.Type != profile.GroupSelector {
		return errorf(CodeBadRequest, fmt.Sprintf("select: group %q is a %s group; only a select group has a chosen member", g.Name, g.Type))
	}
	if !slices.Contains(g.Members, r.ID) {
		return errorf(CodeNotFound, fmt.Sprintf("select: %s is no member of group %q", r.ID, g.Name))
	}
	g.Selected = r.ID
	return nil
}

// Select implements Backend.
func (c *Client) Select(ctx context.Context, r SelectRequest) (*SelectResult, error) {
	var res SelectResult
	if err := c.do(ctx, http.MethodPost, "select", r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
