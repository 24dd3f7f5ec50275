// Package app is Skiff's desktop window, built with Fyne: Home (the connect
// switch, the route in use, live traffic and memory), Profiles
// (subscriptions and nodes), Routes (failover groups and rules),
// Connections, Logs and Settings, and a tray icon where the desktop has a
// tray.
//
// It drives the core only through api.Backend — the service's API client,
// or the core in this process when no service is installed — and does not
// know which it has; it has no protocol code and builds no outbound. Live
// state (status, traffic, events, logs, profile changes) arrives on one
// Watch stream. Updates from the core are collected off the UI thread
// and applied with fyne.Do at most a few times a second; long lists are
// virtualised (widget.List, widget.Table) so thousands of nodes and
// connections stay cheap.
package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/assets"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/sysproxy"
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
	Backend api.Backend // required: the service's client or the in-process core
	// Service says that Backend is the service (which has the rights TUN
	// needs); false: the core runs in this process.
	Service bool
	// PrefsDir is where the window keeps its own preferences (gui.json).
	PrefsDir string
	// Logger receives the window's own log lines; nil: discarded.
	Logger *slog.Logger
	// SystemProxy is this session's proxy settings, which the system
	// proxy mode points at the local proxy; nil: sysproxy.New(PrefsDir).
	SystemProxy *sysproxy.Proxy
}

// UI is Skiff's window and tray. Create it with New on the Fyne main
// goroutine; Close stops what it started.
type UI struct {
	fa       fyne.App
	win      fyne.Window
	b        api.Backend
	service  bool
	prefsDir string
	log      *slog.Logger
	do       func(func()) // runs a func on the UI thread: fyne.Do; tests queue instead

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the update loop and background jobs

	mu       sync.Mutex // guards the fields below
	prefs    Prefs
	switches []group.Event // the failover switches seen, oldest first
	live     live          // the core's state, from the Watch stream
	prof     *profile.Profile

	tabs        *container.AppTabs
	home        *homeView
	profiles    *profilesView
	routes      *routesView
	connections *connectionsView
	logs        *logsView
	settings    *settingsView
	tray        *tray
	sys         *sysKeeper
}

// New builds the window. It does not show it: call Window().Show() or
// ShowAndRun.
func New(fa fyne.App, o Options) (*UI, error) {
	return newUI(fa, o, fyne.Do)
}

// newUI is New with the function that runs work on the UI thread.
func newUI(fa fyne.App, o Options, do func(func())) (*UI, error) {
	if o.Backend == nil || o.PrefsDir == "" {
		return nil, errors.New("app: Backend and PrefsDir are required")
	}
	u := &UI{fa: fa, do: do, b: o.Backend, service: o.Service, prefsDir: o.PrefsDir, log: o.Logger,
		live: live{st: api.Status{State: core.Stopped}}}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	prefs, err := loadPrefs(o.PrefsDir)
	if err != nil {
		u.log.Warn("app: window preferences", "err", err)
	}
	u.prefs = prefs
	if err := setLanguage(languageFor(prefs.Language)); err != nil {
		u.log.Warn("app: language", "err", err)
	}
	u.applyTheme()
	u.ctx, u.cancel = context.WithCancel(context.Background())
	if o.SystemProxy == nil {
		o.SystemProxy = sysproxy.New(o.PrefsDir)
	}
	u.sys = newSysKeeper(o.SystemProxy)

	fa.SetIcon(iconApp)
	u.win = fa.NewWindow(Title)
	u.win.SetIcon(iconApp)

	// Watch before the views read the current state, so nothing falls
	// between the two; the stream's first notice is the state now.
	notices := u.watch()

	u.buildViews()
	u.win.Resize(fyne.NewSize(900, 640))

	u.reloadProfile()
	u.watchTheme()
	u.tray = setupTray(u)
	u.win.SetCloseIntercept(func() {
		if u.tray != nil {
			u.win.Hide() // Skiff stays in the tray
			return
		}
		u.Quit()
	})

	u.wg.Add(1)
	go u.loop(notices)
	if u.Prefs().StartConnected {
		u.Connect()
	}
	return u, nil
}

// buildViews makes the tabs in the window's language and shows them.
func (u *UI) buildViews() {
	u.home = newHomeView(u)
	u.profiles = newProfilesView(u)
	u.routes = newRoutesView(u)
	u.connections = newConnectionsView(u)
	u.logs = newLogsView(u)
	u.settings = newSettingsView(u)
	u.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon(tr("tab.home"), theme.HomeIcon(), u.home.obj),
		container.NewTabItemWithIcon(tr("tab.profiles"), theme.StorageIcon(), u.profiles.obj),
		container.NewTabItemWithIcon(tr("tab.routes"), theme.MenuIcon(), u.routes.obj),
		container.NewTabItemWithIcon(tr("tab.connections"), theme.ComputerIcon(), u.connections.obj),
		container.NewTabItemWithIcon(tr("tab.logs"), theme.DocumentIcon(), u.logs.obj),
		container.NewTabItemWithIcon(tr("tab.settings"), theme.SettingsIcon(), u.settings.obj),
	)
	u.tabs.OnSelected = func(*container.TabItem) { u.refresh() }
	// The window cannot be made smaller than this (Fyne holds a window to
	// its content's minimum): below it, views would overlap.
	u.win.SetContent(container.New(minSize{MinWindow}, u.tabs))
}

// relabel switches to the language the preferences name: every view is
// built again (a widget keeps the words it was given).
func (u *UI) relabel() {
	if err := setLanguage(languageFor(u.Prefs().Language)); err != nil {
		u.log.Warn("app: language", "err", err)
	}
	u.rebuild()
}

// rebuild makes every view again, on the same tab, with the profile and
// the live state shown again.
func (u *UI) rebuild() {
	tab := 0
	if u.tabs != nil {
		tab = u.tabs.SelectedIndex()
	}
	// What Settings just said (a theme is changed by saving Settings).
	said, bad := u.settings.status.Text, u.settings.status.Importance == widget.DangerImportance
	u.buildViews()
	if said != "" {
		u.settings.say(said, bad)
	}
	u.tabs.SelectIndex(tab)
	u.reloadProfile()
	if u.tray != nil {
		u.tray.relabel()
	}
	u.refresh()
}

// MinWindow is the window's minimum size: it fits an 800x600 screen with
// a title bar.
var MinWindow = fyne.NewSize(720, 520)

// minSize lays its objects over its whole size, and asks for at least min.
type minSize struct{ min fyne.Size }

func (l minSize) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

func (l minSize) MinSize(objs []fyne.CanvasObject) fyne.Size {
	m := l.min
	for _, o := range objs {
		m = m.Max(o.MinSize())
	}
	return m
}

// showProfiles opens Profiles with the cursor in its link entry.
func (u *UI) showProfiles() {
	u.tabs.SelectIndex(1)
	u.win.Canvas().Focus(u.profiles.url)
}

// node returns the profile's node id, or nil.
func (u *UI) node(id string) *profile.Node {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.prof == nil {
		return nil
	}
	return u.prof.Node(id)
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
	return savePrefs(u.prefsDir, p)
}

// Close stops the window's goroutines. It leaves the core as it is: with
// the service, closing the window keeps the VPN up; the in-process core is
// stopped by its owner (skiff-window's main) when the process ends.
func (u *UI) Close() {
	u.cancel()
	u.wg.Wait()
	// The system proxy is this session's setting, not the core's: it ends
	// with the window's process, also when the service's VPN goes on.
	u.sys.stop()
}

// Quit stops everything and quits the app.
func (u *UI) Quit() {
	u.Close()
	u.fa.Quit()
}

// Connect starts the core with the profile's route, in the background; the
// outcome reaches the views through the Watch stream.
func (u *UI) Connect() {
	prefs := u.Prefs()
	req := plan.Request{Mode: plan.ModeProxy, Listen: prefs.Listen, NoIPv6: !prefs.IPv6, DNS: prefs.DNSMode}
	switch prefs.Mode {
	case ModeTUN:
		req.Mode = plan.ModeTUN
	case ModeSystemProxy:
		req.Mode = plan.ModeSystemProxy
	}
	u.home.showError("")
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.ctx, 60*time.Second)
		defer cancel()
		_, err := u.b.Connect(ctx, req)
		u.do(func() {
			if err != nil && !api.IsCode(err, api.CodeRunning) {
				u.home.showError(explain(api.Wrap(err), u.service))
				u.home.toggle.Enable()
			}
			u.refresh()
		})
	}()
}

// Disconnect stops the core in the background.
func (u *UI) Disconnect() {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.ctx, 30*time.Second)
		defer cancel()
		if err := u.b.Disconnect(ctx); err != nil {
			u.log.Warn("app: disconnect", "err", err)
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

// live is the core's state as the Watch stream last told it.
type live struct {
	st     api.Status
	snap   core.Snapshot
	groups []core.GroupState
	conns  []stats.ConnInfo
}

// route is what the running Connect uses, for the views: its name, the
// profile group's ID when it is a group, and its servers in failover order.
type route struct {
	name    string
	groupID string
	nodes   []*node.Node
}

// status returns the core's state as last seen.
func (u *UI) status() api.Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.live.st
}

// currentRoute returns what the running Connect uses (from the core's
// status, so that a window opened later shows the live route).
func (u *UI) currentRoute() route {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := u.live.st.Route
	if r == nil {
		return route{}
	}
	rt := route{name: r.Name, groupID: r.GroupID}
	for _, id := range r.IDs {
		if u.prof == nil {
			break
		}
		if n := u.prof.Node(id); n != nil {
			cfg := n.Config
			cfg.Name = n.Name()
			rt.nodes = append(rt.nodes, &cfg)
		}
	}
	return rt
}

// watch opens the Watch stream, again every few seconds while the backend
// cannot be reached (the service restarting); the channel it returns is the
// loop's, closed when the UI closes.
func (u *UI) watch() <-chan api.Notice {
	out := make(chan api.Notice, 64)
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer close(out)
		for {
			ch, err := u.b.Watch(u.ctx, api.WatchOptions{Stats: true, Logs: true})
			if err == nil {
				for n := range ch {
					select {
					case out <- n:
					case <-u.ctx.Done():
						return
					}
				}
				err = &api.Error{Code: api.CodeUnavailable, Message: tr("error.serviceGone")}
			}
			if u.ctx.Err() != nil {
				return
			}
			st := api.Status{State: core.Failed, Since: time.Now(), Error: api.Wrap(err)}
			select {
			case out <- api.Notice{Kind: api.NoticeStatus, Time: time.Now(), Status: &st}:
			case <-u.ctx.Done():
				return
			}
			select {
			case <-time.After(2 * time.Second):
			case <-u.ctx.Done():
				return
			}
		}
	}()
	return out
}

// loop applies the notices of the Watch stream: state changes at once, log
// records batched, traffic once a second (with the groups and connections,
// asked for off the UI thread).
func (u *UI) loop(notices <-chan api.Notice) {
	defer u.wg.Done()
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
		case n, ok := <-notices:
			if !ok {
				return
			}
			switch n.Kind {
			case api.NoticeLog:
				if n.Log != nil && len(pending) < 1000 {
					pending = append(pending, *n.Log)
				}
				continue
			case api.NoticeProfile:
				u.do(u.reloadProfile)
				continue
			case api.NoticeStats:
				if n.Stats != nil {
					u.pullLive(*n.Stats, n.Status)
				}
				continue
			case api.NoticeSwitch:
				if n.Switch != nil {
					u.mu.Lock()
					u.switches = append(u.switches, *n.Switch)
					if over := len(u.switches) - maxSwitches; over > 0 {
						u.switches = append(u.switches[:0], u.switches[over:]...)
					}
					u.mu.Unlock()
				}
			case api.NoticeFlowFailed:
				u.do(func() { u.home.noteFailure(n) })
			}
			if n.Status != nil {
				u.mu.Lock()
				u.live.st = *n.Status
				u.mu.Unlock()
			}
			flush()
		case <-t.C:
			flush()
		}
	}
}

// pullLive records a traffic snapshot and asks for the groups and the
// connections that go with it.
func (u *UI) pullLive(s core.Snapshot, st *api.Status) {
	ctx, cancel := context.WithTimeout(u.ctx, 2*time.Second)
	defer cancel()
	groups, _ := u.b.Groups(ctx)
	var conns []stats.ConnInfo
	if u.status().State == core.Running {
		conns, _ = u.b.Connections(ctx)
	}
	u.mu.Lock()
	u.live.snap, u.live.groups, u.live.conns = s, groups, conns
	if st != nil {
		u.live.st = *st
	}
	u.mu.Unlock()
}

// groups and liveConns return the live groups and connections.
func (u *UI) groups() []core.GroupState {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.live.groups
}

func (u *UI) liveConns() []stats.ConnInfo {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.live.conns
}

// closeConnection asks the core to end connection id, in the background.
func (u *UI) closeConnection(id uint64) {
	u.background(func(ctx context.Context) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		u.b.CloseConnection(cctx, id)
	}, nil)
}

// refresh updates the visible view and the tray from the core. It runs on
// the UI thread.
func (u *UI) refresh() {
	u.mu.Lock()
	st, snap := u.live.st, u.live.snap
	u.mu.Unlock()
	u.sys.follow(st)
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
	ctx, cancel := context.WithTimeout(u.ctx, 5*time.Second)
	defer cancel()
	p, _, err := u.b.Profile(ctx)
	if err != nil {
		u.home.showError(tr("error.readProfile", M{"Err": err.Error()}))
		p = profile.New()
	}
	u.mu.Lock()
	u.prof = p
	u.mu.Unlock()
	u.profiles.setProfile(p)
	u.routes.setProfile(p)
	u.settings.setProfile(p)
	u.home.setProfile(p)
}

// update changes the profile, saves it and reloads the views.
func (u *UI) update(fn func(*profile.Profile) error) error {
	ctx, cancel := context.WithTimeout(u.ctx, 10*time.Second)
	defer cancel()
	err := api.Update(ctx, u.b, fn)
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
// the window. It is safe to call from any goroutine. (The Watch stream's
// profile notices call it already.)
func (u *UI) ProfileChanged() { u.do(u.reloadProfile) }
