package window

import (
	"os"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"github.com/godbus/dbus/v5"

	"github.com/skiffvpn/skiff/app/exitline"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
)

// tray is the system tray icon and menu.
type tray struct {
	u       *UI
	da      desktop.App
	toggle  *fyne.MenuItem
	current *fyne.MenuItem
	exit    *fyne.MenuItem // where traffic leaves from; in the menu while connected
	exitFor *exitline.Line
	open    *fyne.MenuItem
	quit    *fyne.MenuItem
	routing *fyne.MenuItem   // the Routing submenu
	routes  []*fyne.MenuItem // its entries, one per core.Routings
	menu    *fyne.Menu
	state   core.State
	via     string       // the member shown
	shown   core.Routing // the routing checked
}

// setupTray installs the tray icon when the desktop has a tray host, and
// returns nil otherwise (then closing the window quits).
func setupTray(u *UI) *tray {
	da, ok := u.fa.(desktop.App)
	if !ok || !hasTrayHost() {
		return nil
	}
	return newTray(u, da)
}

// newTray puts Skiff's menu and icon on the tray host da.
func newTray(u *UI, da desktop.App) *tray {
	t := &tray{u: u, da: da, state: -1}
	t.toggle = fyne.NewMenuItem(tr("home.connect"), func() {
		if u.status().State == core.Running {
			u.Disconnect()
		} else {
			u.Connect()
		}
	})
	t.current = fyne.NewMenuItem(tr("tray.notConnected"), nil)
	t.current.Disabled = true
	t.exit = fyne.NewMenuItem("", nil)
	t.exit.Disabled = true
	t.open = fyne.NewMenuItem(tr("tray.open"), u.showWindow)
	t.quit = fyne.NewMenuItem(tr("tray.quit"), u.Quit)
	t.quit.IsQuit = true
	t.routing = fyne.NewMenuItem(tr("tray.routing"), nil)
	t.routing.ChildMenu = fyne.NewMenu("")
	for _, m := range core.Routings {
		// Home's control asks the core and says there why a change was refused.
		it := fyne.NewMenuItem(routingLabel(m), func() { u.home.controls.setRouting(m) })
		t.routes = append(t.routes, it)
		t.routing.ChildMenu.Items = append(t.routing.ChildMenu.Items, it)
	}
	t.menu = fyne.NewMenu("Skiff")
	t.setItems()
	t.exitFor = newExitFollower(u, func(s string) {
		t.exit.Label = exitline.MenuLabel(s)
		t.setItems()
		t.menu.Refresh()
	})
	da.SetSystemTrayMenu(t.menu)
	da.SetSystemTrayIcon(iconTrayOff)
	return t
}

// setItems puts the items in the menu, the exit line only while it says
// something (a Fyne menu item cannot hide).
func (t *tray) setItems() {
	items := []*fyne.MenuItem{t.toggle, t.current}
	if t.exit.Label != "" {
		items = append(items, t.exit)
	}
	t.menu.Items = append(items, fyne.NewMenuItemSeparator(), t.routing, fyne.NewMenuItemSeparator(), t.open, t.quit)
}

// update shows st; it runs on the UI thread and touches the tray only on a
// change.
func (t *tray) update(st api.Status) {
	via := st.Member
	if via == "" {
		via = st.Outbound
	}
	t.u.mu.Lock()
	routing := api.RoutingOf(st, t.u.prof)
	t.u.mu.Unlock()
	t.exitFor.Follow(exitline.Key(st))
	if st.State == t.state && via == t.via && routing == t.shown {
		return
	}
	t.state, t.via, t.shown = st.State, via, routing
	for i, it := range t.routes {
		it.Checked = core.Routings[i] == routing
	}
	if st.State == core.Running {
		t.toggle.Label = tr("home.disconnect")
		t.current.Label = exitline.MenuLabel(tr("tray.via", M{"Name": via}))
		t.da.SetSystemTrayIcon(iconTrayOn)
	} else {
		t.toggle.Label = tr("home.connect")
		t.current.Label = tr("tray.notConnected")
		t.da.SetSystemTrayIcon(iconTrayOff)
	}
	t.menu.Refresh()
}

// relabel redraws the menu in the window's language.
func (t *tray) relabel() {
	t.open.Label, t.quit.Label, t.routing.Label = tr("tray.open"), tr("tray.quit"), tr("tray.routing")
	for i, it := range t.routes {
		it.Label = routingLabel(core.Routings[i])
	}
	t.exitFor.Relabel()
	t.state = -1 // update sets the rest
	t.update(t.u.status())
}

// hasTrayHost reports whether the session has a StatusNotifier host (the
// D-Bus tray protocol Fyne uses on Linux and the BSDs). Elsewhere the OS
// always has a tray.
func hasTrayHost() bool {
	if os.Getenv("SKIFF_NO_TRAY") != "" {
		return false
	}
	if !trayViaDBus {
		return true
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return false
	}
	conn, err := dbus.SessionBusPrivate()
	if err != nil {
		return false
	}
	defer conn.Close()
	if err := conn.Auth(nil); err != nil {
		return false
	}
	if err := conn.Hello(); err != nil {
		return false
	}
	var owned bool
	err = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&owned)
	return err == nil && owned
}
