package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/skiffvpn/skiff/core"
)

// Exit is where the user's traffic leaves from (Backend.Exit).
type Exit struct {
	IP        string    `json:"ip"`
	Country   string    `json:"country"` // ISO 3166-1 alpha-2 ("DE"); "XX": unknown
	Via       string    `json:"via"`     // the server (a group's member), or direct, that carried the check
	CheckedAt time.Time `json:"checkedAt"`
}

// Exit implements Backend.
func (l *Local) Exit(ctx context.Context, refresh bool) (*Exit, error) {
	e, err := l.ctrl.Exit(ctx, refresh)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, Wrap(err)
	}
	return &Exit{IP: e.IP.String(), Country: e.Country, Via: e.Via, CheckedAt: e.CheckedAt}, nil
}

// Exit implements Backend.
func (c *Client) Exit(ctx context.Context, refresh bool) (*Exit, error) {
	path := "exit"
	if refresh {
		path += "?refresh=1"
	}
	var e Exit
	if err := c.do(ctx, http.MethodGet, path, nil, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// exitCode classifies the core's errors of Exit.
func exitCode(err error) Code {
	switch {
	case errors.Is(err, core.ErrNotRunning):
		return CodeNotConnected
	case errors.Is(err, core.ErrExitLookup):
		return CodeExitLookup
	}
	return ""
}
