// Package tray is Skiff's tray icon as a process of its own, without Fyne
// or a GL context: a client of the service (core/api) that shows the
// state and where traffic leaves from, connects and disconnects, changes
// the mode and the routing, picks the route and the server of a selector
// group, and starts the window (app/window) as a separate process that
// ends when it is closed. Hidden, Skiff then costs
// what this process costs: it waits on the service's Watch stream and
// wakes only when something changes.
package tray

import (
	"github.com/skiffvpn/skiff/app/exitline"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/i18n"
)

// Bounds of the menu's lists: a tray menu longer than a screen helps
// nobody; the window lists the rest.
const (
	maxRoutes  = 20
	maxMembers = 40
)

// modes are the Mode submenu's entries, in order.
var modes = []struct{ mode, key string }{
	{plan.ModeProxy, "mode.proxy"},
	{plan.ModeSystemProxy, "mode.systemProxy"},
	{plan.ModeTUN, "mode.tun"},
}

// routings are the Routing submenu's entries, in order.
var routings = []struct {
	routing core.Routing
	key     string
}{
	{core.RoutingRule, "routing.rule"},
	{core.RoutingGlobal, "routing.global"},
	{core.RoutingDirect, "routing.direct"},
}

// entry is one checkable line of a list.
type entry struct {
	ID, Label string
	Checked   bool
}

// view is what the menu shows, made from the core's state (pure data, so
// it is tested without a tray).
type view struct {
	Status  string // the first, disabled line
	Exit    string // where traffic leaves from (package exitline), a disabled line; "" hides it
	Running bool
	Toggle  string       // Connect or Disconnect
	Mode    string       // the mode checked
	Routing core.Routing // the routing checked: the running one, else the saved one
	Routes  []entry
	Group   string  // the selector group whose members Members lists; "" when none
	Members []entry // a selector group's members
}

// makeView says what the menu shows for st, the profile p (nil when it
// could not be read), the saved mode, whether the service answers and the
// exit line last shown. Its labels are as the OS's menu draws them
// (exitline.MenuLabel: no flags on Windows).
func makeView(l *i18n.Localizer, st api.Status, p *profile.Profile, mode string, reachable bool, exit string) view {
	v := view{Running: st.State == core.Running, Mode: mode, Routing: api.RoutingOf(st, p)}
	if v.Mode == "" {
		v.Mode = plan.ModeProxy
	}
	if v.Running && st.Route != nil && st.Route.Mode != "" {
		v.Mode = st.Route.Mode // what runs, whatever was saved since
	}
	switch {
	case !reachable:
		v.Status = l.T("tray.noService", nil)
	case v.Running:
		via := st.Member
		if via == "" {
			via = st.Outbound
		}
		v.Status = exitline.MenuLabel(l.T("tray.via", map[string]any{"Name": via}))
		v.Exit = exitline.MenuLabel(exit)
	default:
		v.Status = l.T("tray.notConnected", nil)
	}
	v.Toggle = l.T("home.connect", nil)
	if v.Running {
		v.Toggle = l.T("home.disconnect", nil)
	}
	if p == nil {
		return v
	}
	for _, g := range p.Groups {
		if len(v.Routes) == maxRoutes {
			break
		}
		v.Routes = append(v.Routes, entry{ID: g.ID, Label: exitline.MenuLabel(g.Name), Checked: g.ID == p.Selected})
	}
	if g := p.Group(p.Selected); g != nil && g.Type == profile.GroupSelector {
		v.Group = g.ID
		for _, id := range g.Members {
			if len(v.Members) == maxMembers {
				break
			}
			name := id
			if n := p.Node(id); n != nil {
				name = n.Name()
			} else if sub := p.Group(id); sub != nil {
				name = sub.Name
			}
			v.Members = append(v.Members, entry{ID: id, Label: exitline.MenuLabel(name), Checked: id == g.Selected})
		}
	}
	return v
}
