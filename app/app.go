// Package app is Skiff's desktop window, built with Fyne: Home (the connect
// switch, the route in use, live traffic and memory), Profiles
// (subscriptions and nodes), Routes (failover groups and rules),
// Connections, Logs and Settings, and a tray icon where the desktop has a
// tray.
//
// It drives the engine only through core.Controller and the packages that
// hold the user's data (core/profile, core/subscription, core/link); it has
// no protocol code. Updates from the core are collected off the UI thread
// and applied with fyne.Do at most a few times a second; long lists are
// virtualised (widget.List, widget.Table) so thousands of nodes and
// connections stay cheap.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"

	"github.com/skiffvpn/skiff/assets"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
)

// ID is the application ID (also in FyneApp.toml).
const ID = "io.github.skiffvpn.skiff"

// Title is the main window's title.
const Title = "Skiff"

// tick is how often the views pull from the core: the core samples
// throughput once a second, and every redraw costs a repaint of the window.
const tick = time.Second

// Icons as Fyne resources.
var (
	iconApp     = fyne.NewStaticResource("skiff.png", assets.AppIcon)
	iconTrayOn  = fyne.NewStaticResource("skiff-on.png", assets.TrayOn)
	iconTrayOff = fyne.NewStaticResource("skiff-off.png", assets.TrayOff)
)

// Options are what the window needs.
type Options struct {
	Controller *core.Controller      // required
	Store      *profile.Store        // required: the user's profile
	Fetcher    *subscription.Fetcher // nil: the default
	// Logger receives the window's own log lines; nil: the Controller's.
	Logger *slog.Logger
}

// UI is Skiff's window and tray. Create it with New on the Fyne main
// goroutine; Close stops what it started.
type UI struct {
	fa      fyne.App
	win     fyne.Window
	ctrl    *core.Controller
	store   *profile.Store
	fetcher *subscription.Fetcher
	log     *slog.Logger
	do      func(func()) // runs a func on the UI thread: fyne.Do; tests queue instead

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the update loop and background jobs

	mu       sync.Mutex // guards prefs, rt and switches
	prefs    Prefs
	rt       route         // what the last Connect used
	switches []group.Event // the failover switches seen, oldest first

	tabs        *container.AppTabs
	home        *homeView
	profiles    *profilesView
	routes      *routesView
	connections *connectionsView
	logs        *logsView
	settings    *settingsView
	tray        *tray
}

// New builds the window. It does not show it: call Window().Show() or
// ShowAndRun.
func New(fa fyne.App, o Options) (*UI, error) {
	return newUI(fa, o, fyne.Do)
}

// newUI is New with the function that runs work on the UI thread.
func newUI(fa fyne.App, o Options, do func(func())) (*UI, error) {
	if o.Controller == nil || o.Store == nil {
		return nil, errors.New("app: Controller and Store are required")
	}
	u := &UI{fa: fa, do: do, ctrl: o.Controller, store: o.Store, fetcher: o.Fetcher, log: o.Logger}
	if u.fetcher == nil {
		u.fetcher = &subscription.Fetcher{}
	}
	if u.log == nil {
		u.log = o.Controller.Logger()
	}
	prefs, err := loadPrefs(o.Store.Dir())
	if err != nil {
		u.log.Warn("app: window preferences", "err", err)
	}
	u.prefs = prefs
	u.applyTheme()
	u.ctx, u.cancel = context.WithCancel(context.Background())

	fa.SetIcon(iconApp)
	u.win = fa.NewWindow(Title)
	u.win.SetIcon(iconApp)

	// Subscribe before the views read the current state, so nothing falls
	// between the two.
	events, stopEvents := u.ctrl.Subscribe(16)
	logs, stopLogs := u.ctrl.SubscribeLogs(256)

	u.home = newHomeView(u)
	u.profiles = newProfilesView(u)
	u.routes = newRoutesView(u)
	u.connections = newConnectionsView(u)
	u.logs = newLogsView(u)
	u.settings = newSettingsView(u)
	u.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Home", theme.HomeIcon(), u.home.obj),
		container.NewTabItemWithIcon("Profiles", theme.StorageIcon(), u.profiles.obj),
		container.NewTabItemWithIcon("Routes", theme.MenuIcon(), u.routes.obj),
		container.NewTabItemWithIcon("Connections", theme.ComputerIcon(), u.connections.obj),
		container.NewTabItemWithIcon("Logs", theme.DocumentIcon(), u.logs.obj),
		container.NewTabItemWithIcon("Settings", theme.SettingsIcon(), u.settings.obj),
	)
	u.tabs.OnSelected = func(*container.TabItem) { u.refresh() }
	u.win.SetContent(u.tabs)
	u.win.Resize(fyne.NewSize(900, 640))

	u.reloadProfile()
	u.tray = setupTray(u)
	u.win.SetCloseIntercept(func() {
		if u.tray != nil {
			u.win.Hide() // Skiff stays in the tray
			return
		}
		u.Quit()
	})

	u.wg.Add(1)
	go u.loop(events, stopEvents, logs, stopLogs)
	if u.Prefs().StartConnected {
		u.Connect()
	}
	return u, nil
}

// Window returns the main window.
func (u *UI) Window() fyne.Window { return u.win }

// Prefs returns the window's preferences.
func (u *UI) Prefs() Prefs {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.prefs
}

// setPrefs saves p and applies what takes effect at once.
func (u *UI) setPrefs(p Prefs) error {
	u.mu.Lock()
	u.prefs = p
	u.mu.Unlock()
	u.applyTheme()
	return savePrefs(u.store.Dir(), p)
}

// Close stops the window's goroutines and the core. It does not quit the
// Fyne app.
func (u *UI) Close() {
	u.cancel()
	u.wg.Wait()
	u.ctrl.Stop()
}

// Quit stops everything and quits the app.
func (u *UI) Quit() {
	u.Close()
	u.fa.Quit()
}

// Connect starts the core with the profile's route, in the background; the
// outcome reaches the views through the core's events.
func (u *UI) Connect() {
	p, err := u.store.Load()
	if p == nil {
		u.home.showError("Your profile could not be read: " + err.Error())
		return
	}
	rt, err := buildConfig(p, u.Prefs())
	if err != nil {
		u.home.showError(explain(err.Error()))
		return
	}
	u.mu.Lock()
	u.rt = rt
	u.mu.Unlock()
	u.home.showError("")
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.ctx, 30*time.Second)
		defer cancel()
		// The error also arrives as a Failed state event.
		_ = u.ctrl.Start(ctx, rt.cfg)
		u.do(u.refresh)
	}()
}

// Disconnect stops the core in the background.
func (u *UI) Disconnect() {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		if err := u.ctrl.Stop(); err != nil {
			u.log.Warn("app: stop", "err", err)
		}
		u.do(u.refresh)
	}()
}

// maxSwitches bounds the switch log.
const maxSwitches = 200

// Switches returns the failover switches seen since the window opened,
// oldest first.
func (u *UI) Switches() []group.Event {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]group.Event(nil), u.switches...)
}

// currentRoute returns what the last Connect used.
func (u *UI) currentRoute() route {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.rt
}

// loop pulls the core's state every tick and applies it on the UI thread.
// Events (state changes) trigger an update at once; log records are
// batched.
func (u *UI) loop(events <-chan core.Event, stopEvents func(), logs <-chan core.LogRecord, stopLogs func()) {
	defer u.wg.Done()
	defer stopEvents()
	defer stopLogs()
	t := time.NewTicker(tick)
	defer t.Stop()
	var pending []core.LogRecord
	flush := func() {
		batch := pending
		pending = nil
		u.do(func() {
			u.logs.add(batch)
			u.refresh()
		})
	}
	for {
		select {
		case <-u.ctx.Done():
			return
		case ev := <-events:
			if ev.Kind == core.EventSwitch && ev.Switch != nil {
				u.mu.Lock()
				u.switches = append(u.switches, *ev.Switch)
				if over := len(u.switches) - maxSwitches; over > 0 {
					u.switches = append(u.switches[:0], u.switches[over:]...)
				}
				u.mu.Unlock()
			}
			if ev.Kind == core.EventFlowFailed {
				u.do(func() { u.home.noteFailure(ev) })
			}
			flush()
		case rec := <-logs:
			if len(pending) < 1000 {
				pending = append(pending, rec)
			}
		case <-t.C:
			flush()
		}
	}
}

// refresh updates the visible view and the tray from the core. It runs on
// the UI thread.
func (u *UI) refresh() {
	st := u.ctrl.Status()
	snap := u.ctrl.Stats()
	u.home.update(st, snap)
	u.profiles.flush()
	if u.tray != nil {
		u.tray.update(st)
	}
	if u.tabs == nil || u.tabs.Selected() == nil {
		return
	}
	switch u.tabs.Selected().Content {
	case u.routes.obj:
		u.routes.update()
	case u.connections.obj:
		u.connections.update()
	}
}

// reloadProfile re-reads the profile into every view that shows it. It
// runs on the UI thread.
func (u *UI) reloadProfile() {
	p, err := u.store.Load()
	if p == nil {
		u.home.showError("Your profile could not be read: " + err.Error())
		p = profile.New()
	} else if err != nil {
		u.home.showError(fmt.Sprintf("Your profile was damaged and a fresh one was started: %v", err))
	}
	u.profiles.setProfile(p)
	u.routes.setProfile(p)
	u.settings.setProfile(p)
	u.home.setProfile(p)
}

// update changes the profile, saves it and reloads the views.
func (u *UI) update(fn func(*profile.Profile) error) error {
	err := u.store.Update(fn)
	u.reloadProfile()
	return err
}

// background runs fn on a goroutine the UI owns and then done on the UI
// thread.
func (u *UI) background(fn func(ctx context.Context), done func()) {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		fn(u.ctx)
		if done != nil {
			u.do(done)
		}
	}()
}

// Context is cancelled when the UI closes; background work tied to the
// window (a subscription refresher) can use it.
func (u *UI) Context() context.Context { return u.ctx }

// ProfileChanged reloads the views after the profile was changed outside
// the window (a background refresh). It is safe to call from any goroutine.
func (u *UI) ProfileChanged() { u.do(u.reloadProfile) }
