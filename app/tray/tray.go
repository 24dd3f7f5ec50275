package tray

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"fyne.io/systray"

	"github.com/skiffvpn/skiff/app/exitline"
	"github.com/skiffvpn/skiff/app/guiprefs"
	"github.com/skiffvpn/skiff/app/sysproxy"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/i18n"
)

// Options are what the tray needs.
type Options struct {
	Backend  api.Backend  // required: the service's client
	PrefsDir string       // gui.json, shared with the window (package guiprefs)
	Window   func() error // starts the window's process (or raises the one that runs)
	Logger   *slog.Logger // nil: discarded
}

// Run shows the tray until Quit is chosen or ctx ends. It must be called
// on the main goroutine (the OS tray wants its first thread). The core in
// the service goes on after Run returns.
func Run(ctx context.Context, o Options) {
	t := newTray(ctx, o)
	go func() {
		<-t.ctx.Done()
		systray.Quit()
	}()
	systray.Run(t.ready, func() {})
	t.cancel()
	t.wg.Wait()
	t.sys.Stop() // the session's proxy settings end with the tray
}

// newTray is the tray before its menu: ready builds that and starts its
// goroutines, which end with ctx or Quit (cancel; wait for wg).
func newTray(ctx context.Context, o Options) *tray {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &tray{o: o, ctx: ctx, cancel: cancel, sys: sysproxy.NewKeeper(sysproxy.New(o.PrefsDir)), actions: make(chan func(context.Context), 4),
		reachable: true, st: api.Status{State: core.Stopped}} // main has asked the service; watch says otherwise if it goes
	prefs, err := guiprefs.Load(o.PrefsDir)
	if err != nil {
		o.Logger.Warn("tray: preferences", "err", err)
	}
	lang, ok := i18n.ByCode(prefs.Language)
	if !ok {
		lang = i18n.Match(i18n.SystemLocales()...)
	}
	t.l = i18n.New(lang)
	t.exitFor = exitline.New(exitline.Options{
		Exit:       o.Backend.Exit,
		Words:      func(key string, data map[string]any) string { return t.l.T(key, data) },
		Background: exitline.Goroutines(t.ctx, &t.wg),
		Show: func(s string) {
			t.mu.Lock()
			t.exit = s
			t.mu.Unlock()
			t.show()
		},
	})
	return t
}

// tray is the running tray: its menu items and what it last showed.
type tray struct {
	o       Options
	l       *i18n.Localizer
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the watch loop, the click loop, the action worker, the exit's ask
	sys     *sysproxy.Keeper
	exitFor *exitline.Line             // asks for the exit of each run and server
	actions chan func(context.Context) // clicks' work, done in order by one worker

	mu        sync.Mutex // guards the fields below
	st        api.Status
	prof      *profile.Profile
	reachable bool
	exit      string // the exit line, from exitFor
	shown     *view

	status, exitItem      *systray.MenuItem
	toggle, open, quit    *systray.MenuItem
	modeMenu, routeMenu   *systray.MenuItem
	routingMenu, pickMenu *systray.MenuItem
	modes, routings       []*systray.MenuItem
	routes, members       []*systray.MenuItem
}

// ready builds the menu; systray calls it once the tray runs.
func (t *tray) ready() {
	systray.SetIcon(iconOff)
	systray.SetTitle("Skiff")
	systray.SetTooltip("Skiff")
	t.status = systray.AddMenuItem("", "")
	t.status.Disable()
	t.exitItem = systray.AddMenuItem("", "")
	t.exitItem.Disable()
	t.exitItem.Hide()
	t.toggle = systray.AddMenuItem(t.l.T("home.connect", nil), "")
	systray.AddSeparator()
	t.modeMenu = systray.AddMenuItem(t.l.T("home.mode", nil), "")
	for _, m := range modes {
		t.modes = append(t.modes, t.modeMenu.AddSubMenuItemCheckbox(t.l.T(m.key, nil), "", false))
	}
	t.routingMenu = systray.AddMenuItem(t.l.T("tray.routing", nil), "")
	for _, r := range routings {
		t.routings = append(t.routings, t.routingMenu.AddSubMenuItemCheckbox(t.l.T(r.key, nil), "", false))
	}
	t.routeMenu = systray.AddMenuItem(t.l.T("tray.route", nil), "")
	for range maxRoutes {
		it := t.routeMenu.AddSubMenuItemCheckbox("", "", false)
		it.Hide()
		t.routes = append(t.routes, it)
	}
	t.pickMenu = systray.AddMenuItem(t.l.T("tray.pick", nil), "")
	for range maxMembers {
		it := t.pickMenu.AddSubMenuItemCheckbox("", "", false)
		it.Hide()
		t.members = append(t.members, it)
	}
	t.pickMenu.Hide()
	systray.AddSeparator()
	t.open = systray.AddMenuItem(t.l.T("tray.open", nil), "")
	t.quit = systray.AddMenuItem(t.l.T("tray.quitTray", nil), "")
	t.show()

	t.wg.Add(3)
	go t.watch()
	go t.clicks()
	go t.work()
}

// watch follows the service's Watch stream, opened again every few
// seconds while the service cannot be reached. Between notices nothing
// here wakes.
func (t *tray) watch() {
	defer t.wg.Done()
	for t.ctx.Err() == nil {
		ch, err := t.o.Backend.Watch(t.ctx, api.WatchOptions{})
		if err == nil {
			t.reloadProfile()
			for n := range ch {
				switch {
				case n.Kind == api.NoticeProfile:
					t.reloadProfile()
				case n.Status != nil:
					t.setStatus(*n.Status, true)
				}
			}
		}
		if t.ctx.Err() != nil {
			return
		}
		t.setStatus(api.Status{State: core.Stopped}, false)
		select {
		case <-time.After(2 * time.Second):
		case <-t.ctx.Done():
		}
	}
}

func (t *tray) reloadProfile() {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	p, _, err := t.o.Backend.Profile(ctx)
	if err != nil {
		t.o.Logger.Warn("tray: reading the profile", "err", err)
		return
	}
	t.mu.Lock()
	t.prof = p
	t.mu.Unlock()
	t.show()
}

func (t *tray) setStatus(st api.Status, reachable bool) {
	t.sys.Follow(st.SystemProxyAddr())
	t.mu.Lock()
	t.st, t.reachable = st, reachable
	t.mu.Unlock()
	key := ""
	if reachable {
		key = exitline.Key(st)
	}
	t.exitFor.Follow(key) // asks after a connect, a switch or a reconnect
	t.show()
}

// show puts the current view on the menu, touching only what changed.
func (t *tray) show() {
	prefs, _ := guiprefs.Load(t.o.PrefsDir)
	t.mu.Lock()
	defer t.mu.Unlock()
	v := makeView(t.l, t.st, t.prof, prefs.Mode, t.reachable, t.exit)
	if t.shown != nil && reflect.DeepEqual(*t.shown, v) {
		return
	}
	old := t.shown
	t.shown = &v
	if old == nil || old.Running != v.Running {
		if v.Running {
			systray.SetIcon(iconOn)
		} else {
			systray.SetIcon(iconOff)
		}
	}
	t.status.SetTitle(v.Status)
	systray.SetTooltip("Skiff: " + v.Status)
	if v.Exit != "" {
		t.exitItem.SetTitle(v.Exit)
		t.exitItem.Show()
	} else {
		t.exitItem.Hide()
	}
	t.toggle.SetTitle(v.Toggle)
	for i, m := range modes {
		setChecked(t.modes[i], m.mode == v.Mode)
	}
	for i, r := range routings {
		setChecked(t.routings[i], r.routing == v.Routing)
	}
	fill(t.routes, v.Routes)
	fill(t.members, v.Members)
	if len(v.Members) > 0 {
		t.pickMenu.Show()
	} else {
		t.pickMenu.Hide()
	}
}

func setChecked(it *systray.MenuItem, on bool) {
	if on {
		it.Check()
	} else {
		it.Uncheck()
	}
}

// fill shows es in items, hiding the rest.
func fill(items []*systray.MenuItem, es []entry) {
	for i, it := range items {
		if i >= len(es) {
			it.Hide()
			continue
		}
		it.SetTitle(es[i].Label)
		setChecked(it, es[i].Checked)
		it.Show()
	}
}

// clicks waits for any menu item to be chosen and queues its work.
func (t *tray) clicks() {
	defer t.wg.Done()
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.ctx.Done())}}
	var do []func()
	add := func(it *systray.MenuItem, f func()) {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(it.ClickedCh)})
		do = append(do, f)
	}
	add(t.toggle, func() { t.queue(t.connectOrDisconnect) })
	add(t.open, func() {
		if err := t.o.Window(); err != nil {
			t.o.Logger.Warn("tray: opening the window", "err", err)
		}
	})
	add(t.quit, t.cancel)
	for i := range modes {
		add(t.modes[i], func() { t.queue(func(ctx context.Context) { t.setMode(ctx, modes[i].mode) }) })
	}
	for i := range routings {
		add(t.routings[i], func() { t.queue(func(ctx context.Context) { t.setRouting(ctx, routings[i].routing) }) })
	}
	for i := range t.routes {
		add(t.routes[i], func() { t.queue(func(ctx context.Context) { t.pick(ctx, "", i) }) })
	}
	for i := range t.members {
		add(t.members[i], func() { t.queue(func(ctx context.Context) { t.pick(ctx, "member", i) }) })
	}
	for {
		i, _, _ := reflect.Select(cases)
		if i == 0 {
			return
		}
		do[i-1]()
	}
}

func (t *tray) queue(f func(context.Context)) {
	select {
	case t.actions <- f:
	default: // clicks faster than the service answers: drop the extra
	}
}

// work does the clicks' work, one at a time.
func (t *tray) work() {
	defer t.wg.Done()
	for {
		select {
		case f := <-t.actions:
			ctx, cancel := context.WithTimeout(t.ctx, 60*time.Second)
			f(ctx)
			cancel()
		case <-t.ctx.Done():
			return
		}
	}
}

func (t *tray) connectOrDisconnect(ctx context.Context) {
	t.mu.Lock()
	running := t.st.State == core.Running
	t.mu.Unlock()
	if running {
		if err := t.o.Backend.Disconnect(ctx); err != nil {
			t.o.Logger.Warn("tray: disconnect", "err", err)
		}
		return
	}
	prefs, err := guiprefs.Load(t.o.PrefsDir)
	if err != nil {
		t.o.Logger.Warn("tray: preferences", "err", err)
	}
	if _, err := t.o.Backend.Connect(ctx, prefs.Request()); err != nil && !api.IsCode(err, api.CodeRunning) {
		// The tray has no room for the reason: the window's Home shows it.
		t.o.Logger.Warn("tray: connect", "err", err)
		t.setStatusNote(t.l.T("tray.connectFailed", nil))
	}
}

// setStatusNote shows note on the status line until the next change.
func (t *tray) setStatusNote(note string) {
	t.status.SetTitle(note)
	t.mu.Lock()
	t.shown = nil // the next show redraws everything
	t.mu.Unlock()
}

// setMode asks the service to apply mode (it refuses, with a reason, what
// it cannot), and saves it as the window would.
func (t *tray) setMode(ctx context.Context, mode string) {
	if _, err := t.o.Backend.SetMode(ctx, api.ModeRequest{Mode: mode}); err != nil {
		t.o.Logger.Warn("tray: mode", "mode", mode, "err", err)
		t.setStatusNote(t.l.T("tray.modeRefused", nil))
		t.show()
		return
	}
	p, _ := guiprefs.Load(t.o.PrefsDir)
	p.Mode = mode
	if err := guiprefs.Save(t.o.PrefsDir, p); err != nil {
		t.o.Logger.Warn("tray: saving the mode", "err", err)
	}
	t.show()
}

// setRouting asks the service for routing m (saved in the profile, and
// applied at once when connected); the profile notice that follows
// redraws the menu.
func (t *tray) setRouting(ctx context.Context, m core.Routing) {
	if _, err := t.o.Backend.SetRouting(ctx, api.RoutingRequest{Routing: string(m)}); err != nil {
		t.o.Logger.Warn("tray: routing", "routing", string(m), "err", err)
		why := []rune(api.Wrap(err).Message) // a menu line: the first words of the service's
		if len(why) > 80 {
			why = append(why[:79], '…')
		}
		t.setStatusNote(t.l.T("tray.routingRefused", map[string]any{"Why": string(why)}))
		t.show()
	}
}

// pick makes entry i of the route list (what "") or of the selector
// group's members (what "member") the pick.
func (t *tray) pick(ctx context.Context, what string, i int) {
	t.mu.Lock()
	v := t.shown
	t.mu.Unlock()
	if v == nil {
		return
	}
	r := api.SelectRequest{}
	switch {
	case what == "" && i < len(v.Routes):
		r.ID = v.Routes[i].ID
	case what == "member" && i < len(v.Members):
		r.Group, r.ID = v.Group, v.Members[i].ID
	default:
		return
	}
	if _, err := t.o.Backend.Select(ctx, r); err != nil {
		t.o.Logger.Warn("tray: pick", "id", r.ID, "err", err)
	}
	t.reloadProfile()
}
