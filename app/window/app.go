// Package window is Skiff's desktop window, built with Fyne: Home (the connect
// switch, the route in use, live traffic and memory), Profiles
// (subscriptions and nodes), Routes (failover groups and rules),
// Connections, Logs and Settings, and a tray icon where the desktop has a
// tray.
//
// It drives the core only through api.Backend — the service's API client,
// or the core in this process when no service is installed — and does not
// know which it has; it has no protocol code and builds no outbound. Live
// state (status, events, logs, profile changes) arrives on one Watch
// stream; the live figures (traffic, memory, groups, connections) are
// asked for once a second, and only while the core runs, the window is
// shown and the tab in front shows them: a window left disconnected, or
// hidden to the tray, has no timer of its own (Fyne's event loop is all
// that wakes it), and redraws only what changed. Updates are collected off
// the UI thread and applied with fyne.Do; long lists are virtualised
// (widget.List, widget.Table) so thousands of nodes and connections stay
// cheap.
package window

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/app/autostart"
	"github.com/skiffvpn/skiff/app/sysproxy"
	"github.com/skiffvpn/skiff/assets"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/internal/exepages"
)

// ID is the application ID (also in FyneApp.toml).
const ID = "io.github.skiffvpn.skiff"

// Title is the main window's title.
const Title = "Skiff"

// tick is how often the views ask the core for its figures while they
// show them: the core samples throughput once a second, and every redraw
// costs a repaint of the window. Nothing ticks while the core is stopped,
// the window is hidden or the tab in front shows no live figure (see
// sampling).
const tick = time.Second

// logFlush is how long log records wait to be shown in one batch.
const logFlush = 250 * time.Millisecond

// trimAfter is when, after the window opened, the memory its start took
// (fonts parsed, every tab laid out once) is handed back to the OS; it is
// handed back again whenever the window is hidden to the tray. The Go
// runtime would keep it for reuse, and return it only over minutes.
const trimAfter = 10 * time.Second

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
	// TrayProcess says that the tray process (app/tray) runs beside the
	// window and owns the tray icon and the session's proxy settings: the
	// window has neither, and closing it ends its process.
	TrayProcess bool
	// Login is the user's login item, which Settings turns on and off
	// (autostart.Default: the skiff-tray beside the window); nil: the
	// setting is disabled.
	Login *autostart.Item
}

// UI is Skiff's window and tray. Create it with New on the Fyne main
// goroutine; Close stops what it started.
type UI struct {
	fa       fyne.App
	win      fyne.Window
	b        api.Backend
	service  bool
	prefsDir string
	login    *autostart.Item
	log      *slog.Logger
	do       func(func())   // runs a func on the UI thread: fyne.Do; tests queue instead
	clip     imageClipboard // the clipboard's images (Fyne's is text-only); tests replace it

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the update loop and background jobs

	mu       sync.Mutex // guards the fields below
	prefs    Prefs
	shown    bool          // the window is on screen (not hidden to the tray)
	front    tab           // the tab in front
	ticking  bool          // the loop samples the core every tick (for tests)
	switches []group.Event // the failover switches seen, oldest first
	live     live          // the core's state, from the Watch stream
	prof     *profile.Profile

	viewed chan struct{} // (cap 1) the window was shown or hidden, or the tab changed

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
	u := &UI{fa: fa, do: do, b: o.Backend, service: o.Service, prefsDir: o.PrefsDir, login: o.Login, log: o.Logger,
		live: live{st: api.Status{State: core.Stopped}}, shown: true, front: tabHome, viewed: make(chan struct{}, 1),
		clip: newSysClipboard()}
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
	u.ctx, u.cancel = context.WithCancel(context.Background())
	// The profile's names choose the text font (needCJK) before anything
	// is measured: Fyne keeps the faces it built for the first theme until
	// its driver runs, whatever theme comes between.
	pctx, pcancel := context.WithTimeout(u.ctx, 5*time.Second)
	if p, _, err := u.b.Profile(pctx); err == nil {
		u.prof = p
	}
	pcancel()
	u.applyTheme()
	if o.SystemProxy == nil {
		o.SystemProxy = sysproxy.New(o.PrefsDir)
	}
	if !o.TrayProcess {
		u.sys = newSysKeeper(o.SystemProxy)
	}

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
	if !o.TrayProcess {
		u.tray = setupTray(u)
	}
	u.win.SetCloseIntercept(func() {
		if u.tray != nil {
			u.hideWindow() // Skiff stays in the tray
			return
		}
		u.Quit()
	})

	u.wg.Add(1)
	go u.loop(notices)
	u.wg.Add(1)
	go u.releasePages()
	if u.Prefs().StartConnected {
		u.Connect()
	}
	return u, nil
}

// pagesSettle is how long after the window opens its executable's start-up
// pages are unmapped: by then it has drawn its first frames.
const pagesSettle = 10 * time.Second

// releasePages unmaps, once the window has settled, the pages of its
// executable that only starting touched (package exepages): of the 39 MiB
// of its own binary an idle window had mapped under Xvfb, it goes on using
// a few. What it draws later maps back from the page cache.
func (u *UI) releasePages() {
	defer u.wg.Done()
	t := time.NewTimer(pagesSettle)
	defer t.Stop()
	select {
	case <-u.ctx.Done():
		return
	case <-t.C:
	}
	if _, err := exepages.Release(); err != nil {
		u.log.Debug("app: releasing the executable's pages", "err", err)
	}
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
	u.tabs.OnSelected = func(it *container.TabItem) {
		u.setView(nil, u.tabOf(it.Content))
		u.refresh()
	}
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
	req := u.Prefs().Request()
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
	// targets maps the targets the rules name, as saved, to the core's
	// (api.Route.Targets); sub is the subscription of the route's servers,
	// whose own rules the run uses.
	targets map[string]string
	sub     string
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
	rt := route{name: r.Name, groupID: r.GroupID, targets: r.Targets}
	if len(r.IDs) > 0 && u.prof != nil {
		if n := u.prof.Node(r.IDs[0]); n != nil {
			rt.sub = n.Subscription
		}
	}
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
			ch, err := u.b.Watch(u.ctx, api.WatchOptions{Logs: true})
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

// loop applies the notices of the Watch stream: state changes at once,
// log records in batches, and, while a view shows them, the live figures
// once a tick, asked for off the UI thread (see sampling). An idle window
// (stopped, hidden, or on a tab without live figures) has no timer here.
func (u *UI) loop(notices <-chan api.Notice) {
	defer u.wg.Done()
	var (
		ticker  *time.Ticker
		tickC   <-chan time.Time
		flushC  <-chan time.Time // armed by the first pending log record
		pending []core.LogRecord
		trimC   = time.After(trimAfter)
	)
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		sampleNow := false
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
				if flushC == nil {
					flushC = time.After(logFlush)
				}
				continue
			case api.NoticeProfile:
				u.do(u.reloadProfile)
				continue
			case api.NoticeStats:
				// Only a watcher that asks for them gets these; the
				// window asks the core itself while it shows figures.
				if n.Stats != nil {
					u.setLive(*n.Stats, n.Status, nil, nil)
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
				changed := u.live.st.State != n.Status.State
				u.live.st = *n.Status
				u.mu.Unlock()
				// The figures of the new state once (a stopped core's
				// are empty), then by the tick while it runs.
				sampleNow = changed || n.Kind == api.NoticeSwitch
			}
		case <-u.viewed:
			sampleNow = true
			u.mu.Lock()
			hidden := !u.shown
			u.mu.Unlock()
			if hidden {
				debug.FreeOSMemory()
			}
		case <-trimC:
			trimC = nil
			debug.FreeOSMemory()
			continue
		case <-tickC:
			sampleNow = true
		case <-flushC:
			batch := pending
			pending, flushC = nil, nil
			u.do(func() { u.logs.add(batch) })
			continue
		}
		want := u.sampling()
		if want && ticker == nil {
			ticker = time.NewTicker(tick)
			tickC = ticker.C
		} else if !want && ticker != nil {
			ticker.Stop()
			ticker, tickC = nil, nil
		}
		u.mu.Lock()
		u.ticking = ticker != nil
		u.mu.Unlock()
		if sampleNow && (want || u.status().State != core.Running) {
			u.pullLive()
		}
		u.do(u.refresh)
	}
}

// tab names the tabs whose content the loop cares about.
type tab int

const (
	tabOther tab = iota // Profiles, Logs, Settings: no live figure
	tabHome
	tabRoutes
	tabConnections
)

// tabOf says which tab shows content.
func (u *UI) tabOf(content fyne.CanvasObject) tab {
	switch content {
	case u.home.obj:
		return tabHome
	case u.routes.obj:
		return tabRoutes
	case u.connections.obj:
		return tabConnections
	}
	return tabOther
}

// sampling reports whether the live figures are to be asked for every
// tick: while the core runs, the window is shown and the tab in front
// shows figures (Home: traffic, memory, the member; Routes: the groups;
// Connections: the list). Otherwise nothing ticks; a state change, showing
// the window or choosing a tab asks once at once.
func (u *UI) sampling() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.live.st.State == core.Running && u.shown && u.front != tabOther
}

// isTicking reports whether the loop's ticker runs (for tests).
func (u *UI) isTicking() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ticking
}

// setView records that the window was shown or hidden (shown non-nil) or
// that the tab in front changed, and tells the loop.
func (u *UI) setView(shown *bool, front tab) {
	u.mu.Lock()
	if shown != nil {
		u.shown = *shown
	} else {
		u.front = front
	}
	u.mu.Unlock()
	select {
	case u.viewed <- struct{}{}:
	default:
	}
}

// hideWindow hides the window to the tray: it draws nothing, and nothing
// is sampled for it.
func (u *UI) hideWindow() {
	u.win.Hide()
	shown := false
	u.setView(&shown, 0)
}

// showWindow brings the window back from the tray, with fresh figures.
func (u *UI) showWindow() {
	shown := true
	u.setView(&shown, 0)
	u.win.Show()
	u.win.RequestFocus()
	u.refresh()
}

// pullLive asks for the figures the view in front shows: traffic and
// memory, the status (the member in use may change without an event),
// the groups for Home and Routes, the connections for Connections.
func (u *UI) pullLive() {
	ctx, cancel := context.WithTimeout(u.ctx, 2*time.Second)
	defer cancel()
	u.mu.Lock()
	front, running := u.front, u.live.st.State == core.Running
	u.mu.Unlock()
	s, err := u.b.Stats(ctx)
	if err != nil {
		return
	}
	var (
		st     *api.Status
		groups []core.GroupState
		conns  []stats.ConnInfo
	)
	if running {
		if now, err := u.b.Status(ctx); err == nil {
			st = &now
		}
		if front == tabHome || front == tabRoutes {
			groups, _ = u.b.Groups(ctx)
		}
		if front == tabConnections {
			conns, _ = u.b.Connections(ctx)
		}
	}
	u.setLive(s, st, groups, conns)
}

// setLive records what pullLive (or a stats notice) brought.
func (u *UI) setLive(s core.Snapshot, st *api.Status, groups []core.GroupState, conns []stats.ConnInfo) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.live.snap, u.live.groups, u.live.conns = s, groups, conns
	if st != nil {
		u.live.st = *st
	}
}

// groups and liveConns return the live groups and connections.
func (u *UI) groups() []core.GroupState {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.live.groups
}

// routeGroups returns the live group of the route's servers (none with a
// single server): the groups that rules target are the others.
func (u *UI) routeGroups() []core.GroupState {
	for _, g := range u.groups() {
		if g.Name == core.TargetProxy {
			return []core.GroupState{g}
		}
	}
	return nil
}

// liveGroup returns the live group of the core's target name, or nil.
func (u *UI) liveGroup(name string) *core.GroupState {
	for _, g := range u.groups() {
		if g.Name == name {
			return &g
		}
	}
	return nil
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

// refresh updates the tray, and the view in front while the window is
// shown, from the core's state as last seen; a hidden window and the tabs
// behind are brought up to date when they come to the front. It runs on
// the UI thread.
func (u *UI) refresh() {
	u.mu.Lock()
	st, snap, shown, front := u.live.st, u.live.snap, u.shown, u.front
	u.mu.Unlock()
	u.sys.follow(st) // the desktop's proxy settings follow the core, shown or not
	if u.tray != nil {
		u.tray.update(st)
	}
	if !shown {
		return
	}
	u.profiles.flush()
	switch front {
	case tabHome:
		u.home.update(st, snap)
	case tabRoutes:
		u.routes.update()
	case tabConnections:
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
	u.applyTheme() // CJK names may have come or gone (needCJK)
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
