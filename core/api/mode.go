package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
)

// ModeRequest asks for another mode of the running connection.
type ModeRequest struct {
	Mode string `json:"mode"` // plan.ModeProxy, plan.ModeSystemProxy or plan.ModeTUN
}

// ModeResult says how a mode change took effect.
type ModeResult struct {
	// Live: connected, and the mode is the one asked for now. Between
	// the local proxy and the system proxy nothing reconnects (the core
	// runs the same; Status.Route.Mode changes, and the user's session
	// sets or puts back the desktop's proxy settings as it follows it).
	Live bool `json:"live,omitempty"`
	// Reconnected: the change needed a new connection (to or from TUN
	// mode: the tunnel opens or closes), and it was made.
	Reconnected bool `json:"reconnected,omitempty"`
}

// SetMode implements Backend. Stopped, it does nothing (the mode is the
// next Connect's). A mode the profile cannot run is refused with the
// reason (ErrBadRequest: system proxy with proxy credentials; a TUN
// failure's own code), and the connection stays as it was: a refused
// change to TUN mode connects again in the mode it had.
func (l *Local) SetMode(ctx context.Context, r ModeRequest) (*ModeResult, error) {
	req := plan.Request{Mode: r.Mode}
	if err := req.Validate(); err != nil {
		return nil, errorf(CodeBadRequest, err.Error())
	}
	mode := r.Mode
	if mode == "" {
		mode = plan.ModeProxy
	}
	l.mu.Lock()
	req, connected := l.req, l.route != nil
	l.mu.Unlock()
	if !connected || l.ctrl.Status().State != core.Running {
		return &ModeResult{}, nil
	}
	was := req.Mode
	if was == "" {
		was = plan.ModeProxy
	}
	if was == mode {
		return &ModeResult{Live: true}, nil
	}
	req.Mode = mode
	if _, _, err := l.plan(req); err != nil {
		return nil, err // the reason the profile cannot run that mode
	}
	if was != plan.ModeTUN && mode != plan.ModeTUN {
		l.mu.Lock()
		l.req = req
		if l.route != nil {
			rt := *l.route
			rt.Mode = mode
			l.route = &rt
		}
		l.mu.Unlock()
		if err := l.remember(&req); err != nil {
			l.log.Warn("api: remembering the connection for the next start", "err", err)
		}
		return &ModeResult{Live: true}, nil
	}
	// The tunnel opens or closes: a new connection.
	if err := l.ctrl.Stop(); err != nil {
		return nil, Wrap(err)
	}
	if _, err := l.Connect(ctx, req); err != nil {
		back := req
		back.Mode = was
		if _, berr := l.Connect(ctx, back); berr != nil {
			return nil, errors.Join(err, berr)
		}
		return nil, err
	}
	return &ModeResult{Live: true, Reconnected: true}, nil
}

// SetMode implements Backend.
func (c *Client) SetMode(ctx context.Context, r ModeRequest) (*ModeResult, error) {
	var res ModeResult
	if err := c.do(ctx, http.MethodPost, "mode", r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
