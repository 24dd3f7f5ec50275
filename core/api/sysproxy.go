package api

import (
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
)

// SystemProxyAddr is where the session's proxy settings should point
// while s holds: the local proxy when a route in system-proxy mode runs,
// else "" (put them back). The front end that owns the session's settings
// (the window, or the tray process beside it) follows it.
func (s Status) SystemProxyAddr() string {
	if s.State != core.Running || s.Route == nil || s.Route.Mode != plan.ModeSystemProxy {
		return ""
	}
	return s.Listen
}
