package window

import (
	"context"
	"image/color"
	"sort"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/stats"
)

// modes are the Mode choices in the order shown.
var modes = []string{plan.ModeProxy, plan.ModeSystemProxy, plan.ModeTUN}

// modeLabels are the modes as shown.
func modeLabels() []string {
	return []string{tr("mode.proxy"), tr("mode.systemProxy"), tr("mode.tun")}
}

// modeIndex is mode's place in modes (0, the proxy, for an unknown one).
func modeIndex(mode string) int {
	for i, m := range modes {
		if m == mode {
			return i
		}
	}
	return 0
}

// homeView is the dashboard.
type homeView struct {
	u   *UI
	obj fyne.CanvasObject

	toggle    *widget.Button
	state     *widget.Label // its colour is a theme colour's name, so it follows the theme
	listen    *widget.Label
	controls  *homeControls // routing and mode (homecontrols.go)
	modeNote  *widget.Label
	sysNote   *widget.Label // what the system proxy mode set, or why it could not
	route     *widget.Label
	exit      *exitLine // where traffic leaves from (exit.go)
	reason    *widget.Label
	errBox    *fyne.Container
	errText   *widget.Label
	errMore   *widget.Button // opens the core's own words for the error
	errDetail string
	empty     *fyne.Container // no server yet: what to do
	subNote   *widget.Label
	ksBox     *fyne.Container // traffic is blocked: the kill switch is on and Skiff is not connected
	flowNote  *widget.Label
	flowBox   *fyne.Container // flowNote and its Details
	flowWhy   string          // the core's words for the failure, for Details
	flowDown  int64           // bytes down when the failure was noted; -1: not yet seen
	flowAt    time.Time
	graph     *Graph
	rates     *widget.Label
	totals    *widget.Label
	memCore   *widget.Label
	memWindow *widget.Label
	conns     *widget.Label

	running  bool
	changing bool       // a mode change is asked of the core
	userErr  string     // an error the window found before the core was asked
	shown    api.Status // the status last drawn
	drawn    bool       // whether shown was drawn at all
	memAt    time.Time  // when the memory figures were last shown
	ksStale  bool       // the kill switch's state is to be read again
	phase    phase      // the heading last drawn

	// The run's check: right after connecting, the core probes the
	// route's servers, so the window says Connected only once one
	// answered (or carried traffic).
	checkedRun time.Time         // the run (its Since) probed
	probed     map[string]string // probe outcome by server name: "" answered, else why not
	probing    bool
}

// phase is what Home's heading says.
type phase int

const (
	phaseStopped     phase = iota
	phaseFailed            // the core failed to start
	phaseStarting          // the core is starting
	phaseChecking          // running, no server has answered yet
	phaseConnected         // running, a server answered a probe or carried traffic
	phaseUnreachable       // running, every server failed
)

func newHomeView(u *UI) *homeView {
	h := &homeView{u: u}
	h.toggle = widget.NewButtonWithIcon(tr("home.connect"), theme.MediaPlayIcon(), h.onToggle)
	h.toggle.Importance = widget.HighImportance
	h.state = widget.NewLabelWithStyle(tr("state.disconnected"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	h.state.SizeName = theme.SizeNameHeadingText
	h.listen = widget.NewLabel("")

	h.controls = newHomeControls(h)
	h.modeNote = widget.NewLabel("")
	h.modeNote.Wrapping = fyne.TextWrapWord
	h.modeNote.TextStyle.Italic = true

	h.sysNote = widget.NewLabel("")
	h.sysNote.Wrapping = fyne.TextWrapWord
	h.sysNote.Hide()

	h.route = widget.NewLabel(tr("home.routeNone"))
	h.route.Truncation = fyne.TextTruncateEllipsis
	h.exit = newExitLine(u)
	h.reason = widget.NewLabel("")
	h.reason.TextStyle.Italic = true
	h.reason.Wrapping = fyne.TextWrapWord

	h.errText = widget.NewLabel("")
	h.errText.Wrapping = fyne.TextWrapWord
	h.errText.Importance = widget.DangerImportance
	bg := canvas.NewRectangle(errorTint())
	bg.CornerRadius = theme.InputRadiusSize()
	h.errMore = widget.NewButton(tr("home.details"), func() { showDetails(h.u.win, tr("home.detailsTitle"), h.errDetail) })
	h.errMore.Importance = widget.LowImportance
	h.errBox = container.NewStack(bg, container.NewBorder(nil, nil, widget.NewIcon(theme.ErrorIcon()), container.NewCenter(h.errMore), h.errText))
	h.errBox.Hide()
	emptyText := widget.NewLabel(tr("home.empty"))
	emptyText.Wrapping = fyne.TextWrapWord
	toProfiles := widget.NewButtonWithIcon(tr("home.emptyAction"), theme.ContentAddIcon(), u.showProfiles)
	toProfiles.Importance = widget.HighImportance
	h.empty = container.NewBorder(nil, nil, widget.NewIcon(theme.InfoIcon()), container.NewCenter(toProfiles), emptyText)
	h.empty.Hide()
	h.flowNote = widget.NewLabel("")
	h.flowNote.Wrapping = fyne.TextWrapWord
	h.flowNote.Importance = widget.WarningImportance
	flowMore := widget.NewButton(tr("home.details"), func() { showDetails(h.u.win, tr("home.detailsTitle"), h.flowWhy) })
	flowMore.Importance = widget.LowImportance
	h.flowBox = container.NewBorder(nil, nil, nil, container.NewCenter(flowMore), h.flowNote)
	h.flowBox.Hide()
	h.subNote = widget.NewLabel("")
	h.subNote.Wrapping = fyne.TextWrapWord
	h.subNote.Importance = widget.WarningImportance
	h.subNote.Hide()

	ksText := widget.NewLabel(tr("home.killSwitchBlocking"))
	ksText.Wrapping = fyne.TextWrapWord
	ksText.Importance = widget.WarningImportance
	ksOff := widget.NewButton(tr("home.killSwitchOff"), h.onKillSwitchOff)
	h.ksBox = container.NewBorder(nil, nil, widget.NewIcon(theme.WarningIcon()), container.NewHBox(widget.NewButton(tr("home.connect"), h.onToggle), ksOff), ksText)
	h.ksBox.Hide()

	h.graph = newGraph()
	h.rates = widget.NewLabel("")
	h.totals = widget.NewLabel("")
	h.memCore = widget.NewLabel("")
	h.memWindow = widget.NewLabel("")
	h.memWindow.TextStyle.Italic = true
	h.conns = widget.NewLabel("")

	big := container.NewGridWrap(fyne.NewSize(200, 56), h.toggle)
	head := container.NewHBox(big, container.NewVBox(h.state, h.listen))
	top := container.NewVBox(head, h.empty, h.controls.obj, h.modeNote, h.sysNote, h.route, h.reason, h.exit.label, h.errBox, h.ksBox, h.flowBox, h.subNote)
	// The figures take lines of their own so that longer languages fit
	// at 800 px; the memory note wraps.
	h.memCore.Wrapping = fyne.TextWrapWord
	figures := container.NewVBox(
		container.NewHBox(h.rates, layout.NewSpacer(), h.totals),
		h.conns,
		container.NewBorder(nil, nil, nil, nil, h.memCore),
		h.memWindow,
	)
	// When the notes need more than the window has, Home scrolls: the
	// graph keeps its least height, and no note is drawn over its legend.
	h.obj = container.NewPadded(container.NewVScroll(container.NewBorder(top, figures, nil, nil, h.graph)))
	h.setMode(u.Prefs().Mode)
	h.update(api.Status{State: core.Stopped}, core.Snapshot{Memory: stats.ReadMemory()})
	return h
}

// onKillSwitchOff turns the kill switch off: the setting, and the rules now.
func (h *homeView) onKillSwitchOff() {
	if err := h.u.update(func(p *profile.Profile) error {
		p.Settings.TUN.KillSwitch = false
		return nil
	}); err != nil {
		h.showError(tr("error.saveProfile", M{"Err": err.Error()}))
		return
	}
	// The service applies the saved setting itself (as root); the core in
	// this process needs it done here.
	if !h.u.service {
		if err := core.ApplyKillSwitch(&core.TUNConfig{}, "", nil, h.u.log); err != nil {
			h.showError(tr("error.killSwitchOff", M{"Err": err.Error()}))
			return
		}
	}
	h.ksBox.Hide()
}

// setMode shows mode and the note about it.
func (h *homeView) setMode(mode string) {
	ok, why := tunAvailable()
	note := ""
	if !ok {
		note = why
	} else if hint := privilegeHint(h.u.service); hint != "" && mode == plan.ModeTUN {
		note = hint
	}
	if mode == plan.ModeTUN && !ok {
		mode = plan.ModeProxy
	}
	h.controls.showMode(mode)
	h.modeNote.SetText(note)
	if note == "" {
		h.modeNote.Hide()
	} else {
		h.modeNote.Show()
	}
}

func (h *homeView) onToggle() {
	if h.running {
		h.toggle.Disable()
		h.u.Disconnect()
		return
	}
	h.toggle.Disable()
	h.u.Connect()
	if h.userErr != "" { // Connect refused before starting the core
		h.toggle.Enable()
	}
}

// showError shows (or with "" hides) an error the window itself found.
func (h *homeView) showError(msg string) {
	h.userErr = msg
	h.setError(msg, "")
}

// setError shows msg in plain words, with the core's own words behind
// the Details button ("" hides it); "" hides the box.
func (h *homeView) setError(msg, detail string) {
	if msg == "" {
		if h.errBox.Visible() {
			h.errBox.Hide()
		}
		return
	}
	h.errDetail = detail
	if (detail == "") == h.errMore.Visible() {
		h.errMore.Hidden = detail == ""
		h.errMore.Refresh()
	}
	setText(h.errText, msg)
	if !h.errBox.Visible() {
		h.errBox.Show()
	}
}

// Error returns the error Home shows, or "".
func (h *homeView) Error() string {
	if !h.errBox.Visible() {
		return ""
	}
	return h.errText.Text
}

// noteFailure shows the latest failure of a server to carry a connection
// (the core's EventFlowFailed): with a single server it is the only sign
// that the server is down or refuses the credentials.
func (h *homeView) noteFailure(ev api.Notice) {
	e := ev.Error
	if e == nil {
		e = &api.Error{Code: api.CodeInternal, Message: ev.Message}
	}
	h.flowNote.SetText(tr("home.flowsFailing", M{"Time": fmtr().Clock(ev.Time), "Why": explain(e, h.u.service)}))
	h.flowWhy = e.Message
	h.flowDown, h.flowAt = -1, time.Now()
	h.flowBox.Show()
}

// goodTraffic is how much must come down after a failure was noted, and
// how long after, for the note to go: the failures have stopped mattering.
const (
	goodTrafficBytes = 1 << 20
	goodTrafficAfter = 10 * time.Second
)

// clearFlowNote hides the failure note once good traffic follows it.
func (h *homeView) clearFlowNote(down int64) {
	if !h.flowBox.Visible() {
		return
	}
	if h.flowDown < 0 || down < h.flowDown {
		h.flowDown = down
		return
	}
	if down-h.flowDown >= goodTrafficBytes && time.Since(h.flowAt) >= goodTrafficAfter {
		h.flowBox.Hide()
	}
}

// FlowNote returns the connection failure Home shows, or "".
func (h *homeView) FlowNote() string {
	if !h.flowBox.Visible() {
		return ""
	}
	return h.flowNote.Text
}

// setProfile shows subscription problems that need the user, and what
// to do first when there is no server at all.
func (h *homeView) setProfile(p *profile.Profile) {
	if none := len(p.Nodes) == 0; none != h.empty.Visible() {
		h.empty.Hidden = !none
		h.empty.Refresh()
	}
	h.ksStale = true
	h.controls.update(h.shown) // a routing saved while stopped
	var bad []string
	for _, s := range p.Subscriptions {
		if s.LastError != "" {
			bad = append(bad, tr("home.subRefreshFailed", M{"Name": subscriptionTitle(p, s), "Err": s.LastError}))
		}
		if ui := s.UserInfo; ui != nil && !ui.Expire.IsZero() && time.Until(ui.Expire) < 72*time.Hour {
			bad = append(bad, tr("home.subExpires", M{"Name": subscriptionTitle(p, s), "When": fmtr().DateTime(ui.Expire)}))
		}
	}
	if len(bad) == 0 {
		h.subNote.Hide()
		return
	}
	h.subNote.SetText(strings.Join(bad, "\n") + "\n" + tr("home.subSeeProfiles"))
	h.subNote.Show()
}

// update shows the core's state and figures.
func (h *homeView) update(st api.Status, s core.Snapshot) {
	h.running = st.State == core.Running || st.State == core.Starting
	h.controls.update(st)
	h.clearFlowNote(s.Down)
	h.check(st)
	groups := h.u.routeGroups()
	ph, why := h.phaseOf(st, groups)
	// Redraw only what changed: an idle window should cost next to nothing.
	if st.State != h.shown.State || st.Listen != h.shown.Listen || ph != h.phase || !h.drawn {
		h.phase = ph
		h.drawState(st)
		if st.State != core.Running {
			h.flowBox.Hide() // failures of an earlier run
		}
	}
	stateChanged := st.State != h.shown.State || !h.drawn
	h.shown, h.drawn = st, true
	switch {
	case st.State == core.Failed && st.Error != nil:
		h.setError(explain(st.Error, h.u.service), details(st.Error))
	case h.userErr != "":
		h.setError(h.userErr, "")
	default:
		h.setError("", "")
	}

	if note, bad := h.u.sys.describe(); note != h.sysNote.Text || note != "" != h.sysNote.Visible() {
		h.sysNote.Importance = widget.MediumImportance
		if bad {
			h.sysNote.Importance = widget.WarningImportance
		}
		h.sysNote.SetText(note)
		h.sysNote.Hidden = note == ""
		h.sysNote.Refresh()
	}

	// The kill switch changes with the state or the profile: read its
	// state (a file) then, not on every update.
	if stateChanged || h.ksStale {
		h.ksStale = false
		if blocked := st.State != core.Running && core.KillSwitchInForce(); blocked != h.ksBox.Visible() {
			h.ksBox.Hidden = !blocked
			h.ksBox.Refresh()
		}
	}

	rt := h.u.currentRoute()
	switch {
	case st.State == core.Running && ph == phaseConnected:
		member, reason := h.member(rt, st, groups)
		setText(h.route, tr("home.routeVia", M{"Route": rt.name, "Member": member}))
		h.exit.update(st, true)
		setText(h.reason, reason)
		h.reason.Show()
	case st.State == core.Running:
		h.exit.update(st, false)
		setText(h.route, tr("home.routeOnly", M{"Route": rt.name}))
		setText(h.reason, why)
		h.reason.Show()
	default:
		h.exit.update(st, false)
		setText(h.route, tr("home.routeNone"))
		h.reason.Hide()
	}
	// A new second of the same rates (an idle minute) draws nothing.
	if !h.graph.Shows(s.Series) {
		h.graph.SetSamples(s.Series)
	}
	setText(h.rates, tr("home.rates", M{"Up": rateString(s.Rate.Up), "Down": rateString(s.Rate.Down)}))
	setText(h.totals, tr("home.totals", M{"Up": bytesString(s.Up), "Down": bytesString(s.Down)}))
	// With the service the figures are the service's; with the core in
	// this process, the core's and the window's together. Memory moves
	// by a few KiB all the time, and every change repaints the window:
	// look every few seconds, in whole MiB.
	if now := time.Now(); now.Sub(h.memAt) >= 3*time.Second {
		h.memAt = now
		setText(h.memCore, tr("home.memory", M{"Heap": mibString(s.Memory.Heap), "RSS": mibString(s.Memory.RSS)}))
		if h.u.service {
			w := stats.ReadMemory()
			setText(h.memWindow, tr("home.memoryService", M{"RSS": mibString(w.RSS)}))
		} else {
			setText(h.memWindow, tr("home.memoryShared"))
		}
	}
	conns := tr("home.connections", M{"N": fmtr().Int(int64(s.Connections))})
	if s.Panics > 0 {
		// Each was one flow's internal error; that flow was closed and the
		// rest went on. The Logs tab has the first one's stack.
		conns += " · " + tr("home.panics", M{"N": fmtr().Int(int64(s.Panics))})
	}
	setText(h.conns, conns)
}

// drawState shows the switch and the state line for st.
func (h *homeView) drawState(st api.Status) {
	switch st.State {
	case core.Running:
		h.toggle.SetText(tr("home.disconnect"))
		h.toggle.SetIcon(theme.MediaStopIcon())
		h.toggle.Importance = widget.DangerImportance
		h.toggle.Enable()
		switch h.phase {
		case phaseConnected:
			h.state.Text = tr("state.connected")
			h.state.Importance = widget.SuccessImportance
		case phaseUnreachable:
			h.state.Text = tr("state.unreachable")
			h.state.Importance = widget.DangerImportance
		default:
			h.state.Text = tr("state.connecting")
			h.state.Importance = widget.MediumImportance
		}
		setText(h.listen, tr("home.listen", M{"Addr": st.Listen}))
	case core.Starting:
		h.toggle.SetText(tr("state.connecting"))
		h.toggle.Disable()
		h.state.Text = tr("state.connecting")
		h.state.Importance = widget.MediumImportance
	default:
		h.toggle.SetText(tr("home.connect"))
		h.toggle.SetIcon(theme.MediaPlayIcon())
		h.toggle.Importance = widget.HighImportance
		h.toggle.Enable()
		h.state.Text = tr("state.disconnected")
		h.state.Importance = widget.MediumImportance
		if st.State == core.Failed {
			h.state.Text = tr("state.failed")
			h.state.Importance = widget.DangerImportance
		}
		setText(h.listen, "")
	}
	h.toggle.Refresh()
	h.state.Refresh()
}

// check probes the route's servers once per run, so that Home says
// Connected only once one answered.
func (h *homeView) check(st api.Status) {
	if st.State != core.Running {
		h.checkedRun, h.probed, h.probing = time.Time{}, nil, false
		return
	}
	if h.checkedRun.Equal(st.Since) || st.Route == nil || len(st.Route.IDs) == 0 {
		return
	}
	h.checkedRun, h.probed, h.probing = st.Since, nil, true
	ids, run := st.Route.IDs, st.Since
	if len(ids) > maxCheck {
		ids = ids[:maxCheck] // the first in failover order carry the traffic
	}
	var res []api.ProbeResult
	var err error
	h.u.background(func(ctx context.Context) {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err = h.u.b.Probe(pctx, ids)
	}, func() {
		if !h.checkedRun.Equal(run) {
			return // another run by now
		}
		h.probing = false
		h.probed = map[string]string{}
		for _, r := range res {
			name := r.ID
			if n := h.u.node(r.ID); n != nil {
				name = n.Name()
			}
			switch {
			case r.Error == nil && !r.Timeout:
				h.probed[name] = ""
			case r.Timeout:
				h.probed[name] = tr("home.probeTimeout")
			default:
				h.probed[name] = explainProbe(r.Error)
			}
		}
		if err != nil && len(res) == 0 {
			h.probed[tr("home.theServers")] = tr("home.probeFailed", M{"Err": explain(api.Wrap(err), h.u.service)})
		}
		h.u.refresh()
	})
}

// maxCheck bounds the servers probed when a run starts.
const maxCheck = 8

// explainProbe says in plain words why a probe through a server failed.
func explainProbe(e *api.Error) string {
	if e.Code == api.CodeServerAuth {
		return tr("home.probeAuth")
	}
	return tr("home.probeNoAnswer")
}

// phaseOf returns what the heading says for st, and for a run not yet
// connected, why in plain words: which servers failed, and how.
func (h *homeView) phaseOf(st api.Status, groups []core.GroupState) (phase, string) {
	switch st.State {
	case core.Starting:
		return phaseStarting, ""
	case core.Failed:
		return phaseFailed, ""
	case core.Running:
	default:
		return phaseStopped, ""
	}
	// Every server the run has: the groups' members, else the probed.
	var names []string
	health := map[string]group.MemberState{}
	for _, g := range groups {
		for _, m := range g.Members {
			names = append(names, m.Name)
			health[m.Name] = m
		}
	}
	if len(groups) == 0 {
		for name := range h.probed {
			names = append(names, name)
		}
	}
	var failed []string
	for _, name := range names {
		m, inGroup := health[name]
		probe, probed := h.probed[name]
		switch {
		case m.Health == group.Healthy || (probed && probe == ""):
			return phaseConnected, ""
		case inGroup && (m.Health == group.Failing || m.Health == group.Recovering):
			// The group's LastError is the core's chain (Routes shows it
			// whole): Home says it in words, the probe's when it has one,
			// else the kind of the group's failure.
			why := probe
			if why == "" {
				why = faultWords(m.Fault, tr("home.probeNoAnswer"))
			}
			failed = append(failed, tr("home.serverFailed", M{"Name": name, "Why": why}))
		case probed:
			failed = append(failed, tr("home.serverFailed", M{"Name": name, "Why": probe}))
		}
	}
	tried, members := len(failed), len(names)
	sort.Strings(failed)
	switch {
	case members > 0 && tried == members:
		return phaseUnreachable, strings.Join(failed, "\n")
	case len(failed) > 0:
		return phaseChecking, tr("home.checking") + "\n" + strings.Join(failed, "\n")
	}
	return phaseChecking, tr("home.checking")
}

// showDetails opens a dialog with text whole: wrapped, selectable, with a
// button that copies it.
func showDetails(win fyne.Window, title, text string) {
	l := widget.NewLabel(text)
	l.Wrapping = fyne.TextWrapWord
	l.Selectable = true
	scroll := container.NewVScroll(l)
	scroll.SetMinSize(fyne.NewSize(480, 160))
	d := dialog.NewCustom(title, tr("dialog.close"), scroll, win)
	copyBtn := widget.NewButtonWithIcon(tr("logs.copy"), theme.ContentCopyIcon(), func() {
		fyne.CurrentApp().Clipboard().SetContent(text)
	})
	d.SetButtons([]fyne.CanvasObject{copyBtn, widget.NewButton(tr("dialog.close"), d.Hide)})
	d.Show()
}

// errorTint is the error box's background: the theme's error colour,
// faint. (It is set again when the views are built for a new theme.)
func errorTint() color.Color { return errorTintOf(theme.Color(theme.ColorNameError)) }

// errorTintOf is the error box's background for the error colour c.
func errorTintOf(c color.Color) color.Color {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = 0x24
	return n
}

// setText sets l's text when it differs: SetText always redraws.
func setText(l *widget.Label, s string) {
	if l.Text != s {
		l.SetText(s)
	}
}

// member names what carries traffic now and why: the failover group's
// current member and its last switch, or the single server. Right after
// connecting the status may not name the member yet while the group
// does: the group's word is taken then.
func (h *homeView) member(rt route, st api.Status, groups []core.GroupState) (string, string) {
	name := st.Member
	for _, g := range groups {
		if name == "" {
			name = g.Current
		}
	}
	if name == "" {
		name = st.Outbound
		if len(groups) > 0 {
			name = tr("home.noUsableServer")
		}
	}
	label := name
	for _, n := range rt.nodes {
		if n.Name == name {
			label = tr("home.memberProtocol", M{"Name": name, "Protocol": protocolLabel(n)})
		}
	}
	for _, g := range groups {
		for _, m := range g.Members {
			if m.Name == g.Current && m.RTT > 0 {
				label = tr("home.memberRTT", M{"Member": label, "RTT": tr("unit.ms", M{"N": m.RTT.Milliseconds()})})
			}
		}
	}
	// The route's last switch: the rule targets' groups switch too.
	sw := h.u.Switches()
	for i := len(sw) - 1; i >= 0; i-- {
		if last := sw[i]; last.Group == core.TargetProxy {
			return label, switchWhy(last.Why, last.Reason) + ", " + last.Time.Local().Format("15:04")
		}
	}
	switch {
	case st.Why != nil:
		return label, switchWhy(*st.Why, st.Reason)
	case st.Reason != "":
		return label, st.Reason
	case len(rt.nodes) > 1:
		return label, tr("home.firstInOrder")
	}
	return label, tr("home.onlyServer")
}
