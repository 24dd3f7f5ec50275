package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/profile"
)

// RoutingRequest asks for another routing: core.RoutingRule,
// core.RoutingGlobal or core.RoutingDirect (not the mode: see ModeRequest).
type RoutingRequest struct {
	Routing string `json:"routing"`
}

// RoutingResult says how a routing change took effect.
type RoutingResult struct {
	// Live: connected, and new flows are routed so now; the open ones
	// stay where they are.
	Live bool `json:"live,omitempty"`
}

// SetRouting implements Backend: the routing is saved in the profile (the
// next Connect's) and, when connected, applied at once
// (core.Controller.SetRouting). An unknown routing is ErrBadRequest; global
// routing in a run without a route is ErrNoServer, and nothing is saved.
func (l *Local) SetRouting(_ context.Context, r RoutingRequest) (*RoutingResult, error) {
	m, err := core.ParseRouting(r.Routing)
	if err != nil {
		return nil, errorf(CodeBadRequest, err.Error())
	}
	res := &RoutingResult{}
	l.mu.Lock()
	connected := l.route != nil
	l.mu.Unlock()
	if connected && l.ctrl.Status().State == core.Running {
		switch err := l.ctrl.SetRouting(m); {
		case errors.Is(err, core.ErrNotRunning): // stopped in between: saved only
		case err != nil:
			return nil, Wrap(err)
		default:
			res.Live = true
		}
	}
	if err := l.update(func(p *profile.Profile) error {
		p.Routing = string(m)
		if m == core.RoutingRule {
			p.Routing = "" // the default, as saved before routings were
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return res, nil
}

// SetRouting implements Backend.
func (c *Client) SetRouting(ctx context.Context, r RoutingRequest) (*RoutingResult, error) {
	var res RoutingResult
	if err := c.do(ctx, http.MethodPost, "routing", r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// RoutingOf is the routing a front end shows: the running core's, else the
// one saved in p (nil: the default), which the next Connect runs.
func RoutingOf(st Status, p *profile.Profile) core.Routing {
	if st.Routing != "" && (st.State == core.Running || st.State == core.Starting) {
		return core.Routing(st.Routing)
	}
	if p != nil {
		if m, err := core.ParseRouting(p.Routing); err == nil {
			return m
		}
	}
	return core.RoutingRule
}
