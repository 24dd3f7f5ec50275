package app

import (
	"fmt"
	"image/color"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/stats"
)

// Mode choices as shown.
const (
	modeProxyLabel = "Local proxy only (SOCKS5/HTTP)"
	modeTUNLabel   = "System-wide VPN (TUN)"
)

// homeView is the dashboard.
type homeView struct {
	u   *UI
	obj fyne.CanvasObject

	toggle    *widget.Button
	state     *canvas.Text
	listen    *widget.Label
	mode      *widget.Select
	modeNote  *widget.Label
	route     *widget.Label
	reason    *widget.Label
	errBox    *fyne.Container
	errText   *widget.Label
	subNote   *widget.Label
	ksBox     *fyne.Container // traffic is blocked: the kill switch is on and Skiff is not connected
	flowNote  *widget.Label
	graph     *Graph
	rates     *widget.Label
	totals    *widget.Label
	memCore   *widget.Label
	memWindow *widget.Label
	conns     *widget.Label

	running bool
	userErr string     // an error the window found before the core was asked
	shown   api.Status // the status last drawn
	drawn   bool       // whether shown was drawn at all
	memAt   time.Time  // when the memory figures were last shown
	ksStale bool       // the kill switch's state is to be read again
}

func newHomeView(u *UI) *homeView {
	h := &homeView{u: u}
	h.toggle = widget.NewButtonWithIcon("Connect", theme.MediaPlayIcon(), h.onToggle)
	h.toggle.Importance = widget.HighImportance
	h.state = canvas.NewText("Disconnected", theme.Color(theme.ColorNameForeground))
	h.state.TextSize = theme.TextHeadingSize()
	h.state.TextStyle.Bold = true
	h.listen = widget.NewLabel("")

	h.mode = widget.NewSelect([]string{modeProxyLabel, modeTUNLabel}, h.onMode)
	h.modeNote = widget.NewLabel("")
	h.modeNote.Wrapping = fyne.TextWrapWord
	h.modeNote.TextStyle.Italic = true

	h.route = widget.NewLabel("Route: —")
	h.route.Truncation = fyne.TextTruncateEllipsis
	h.reason = widget.NewLabel("")
	h.reason.TextStyle.Italic = true
	h.reason.Truncation = fyne.TextTruncateEllipsis

	h.errText = widget.NewLabel("")
	h.errText.Wrapping = fyne.TextWrapWord
	h.errText.Importance = widget.DangerImportance
	bg := canvas.NewRectangle(color.NRGBA{R: 0xf8, G: 0x51, B: 0x49, A: 0x24})
	bg.CornerRadius = theme.InputRadiusSize()
	h.errBox = container.NewStack(bg, container.NewBorder(nil, nil, widget.NewIcon(theme.ErrorIcon()), nil, h.errText))
	h.errBox.Hide()
	h.flowNote = widget.NewLabel("")
	h.flowNote.Wrapping = fyne.TextWrapWord
	h.flowNote.Importance = widget.WarningImportance
	h.flowNote.Hide()
	h.subNote = widget.NewLabel("")
	h.subNote.Wrapping = fyne.TextWrapWord
	h.subNote.Importance = widget.WarningImportance
	h.subNote.Hide()

	ksText := widget.NewLabel("Traffic is blocked: Skiff is not connected and the kill switch is on.")
	ksText.Wrapping = fyne.TextWrapWord
	ksText.Importance = widget.WarningImportance
	ksOff := widget.NewButton("Turn the kill switch off", h.onKillSwitchOff)
	h.ksBox = container.NewBorder(nil, nil, widget.NewIcon(theme.WarningIcon()), container.NewHBox(widget.NewButton("Connect", h.onToggle), ksOff), ksText)
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
	modeRow := container.NewBorder(nil, nil, widget.NewLabel("Mode"), nil, h.mode)
	top := container.NewVBox(head, modeRow, h.modeNote, h.route, h.reason, h.errBox, h.ksBox, h.flowNote, h.subNote)
	figures := container.NewVBox(
		container.NewHBox(h.rates, layout.NewSpacer(), h.totals, layout.NewSpacer(), h.conns),
		container.NewHBox(h.memCore, h.memWindow),
	)
	h.obj = container.NewPadded(container.NewBorder(top, figures, nil, nil, h.graph))
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
		h.showError("Could not save the profile: " + err.Error())
		return
	}
	if err := core.ApplyKillSwitch(&core.TUNConfig{}, "", nil, h.u.log); err != nil {
		h.showError("The kill switch could not be turned off: " + err.Error())
		return
	}
	h.ksBox.Hide()
}

// setMode shows mode and the note about it.
func (h *homeView) setMode(mode string) {
	ok, why := tunAvailable()
	note := ""
	if !ok {
		note = why
	} else if hint := privilegeHint(h.u.service); hint != "" && mode == ModeTUN {
		note = hint
	}
	if mode == ModeTUN && ok {
		h.mode.SetSelectedIndex(1)
	} else {
		h.mode.SetSelectedIndex(0)
	}
	h.modeNote.SetText(note)
	if note == "" {
		h.modeNote.Hide()
	} else {
		h.modeNote.Show()
	}
}

func (h *homeView) onMode(label string) {
	mode := ModeProxy
	if label == modeTUNLabel {
		if ok, why := tunAvailable(); !ok {
			h.mode.SetSelected(modeProxyLabel)
			h.modeNote.SetText(why)
			h.modeNote.Show()
			return
		}
		mode = ModeTUN
	}
	p := h.u.Prefs()
	if p.Mode != mode && !(p.Mode == "" && mode == ModeProxy) {
		p.Mode = mode
		h.u.setPrefs(p)
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
	h.setError(msg)
}

func (h *homeView) setError(msg string) {
	if msg == "" {
		if h.errBox.Visible() {
			h.errBox.Hide()
		}
		return
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
	h.flowNote.SetText("Connections are failing (" + ev.Time.Local().Format("15:04:05") + "): " + explain(e, h.u.service))
	h.flowNote.Show()
}

// FlowNote returns the connection failure Home shows, or "".
func (h *homeView) FlowNote() string {
	if !h.flowNote.Visible() {
		return ""
	}
	return h.flowNote.Text
}

// setProfile shows subscription problems that need the user.
func (h *homeView) setProfile(p *profile.Profile) {
	h.ksStale = true
	var bad []string
	for _, s := range p.Subscriptions {
		if s.LastError != "" {
			name := s.DisplayName()
			if name == "" {
				name = "a subscription"
			}
			bad = append(bad, fmt.Sprintf("Subscription %q failed to refresh: %s", name, s.LastError))
		}
		if ui := s.UserInfo; ui != nil && !ui.Expire.IsZero() && time.Until(ui.Expire) < 72*time.Hour {
			bad = append(bad, fmt.Sprintf("Subscription %q expires %s: renew it with your provider.", s.DisplayName(), ui.Expire.Local().Format("2006-01-02 15:04")))
		}
	}
	if len(bad) == 0 {
		h.subNote.Hide()
		return
	}
	h.subNote.SetText(strings.Join(bad, "\n") + "\nSee Profiles to refresh or fix it.")
	h.subNote.Show()
}

// update shows the core's state and figures.
func (h *homeView) update(st api.Status, s core.Snapshot) {
	h.running = st.State == core.Running || st.State == core.Starting
	// Redraw only what changed: an idle window should cost next to nothing.
	if st.State != h.shown.State || st.Listen != h.shown.Listen || !h.drawn {
		h.drawState(st)
		if st.State != core.Running {
			h.flowNote.Hide() // failures of an earlier run
		}
	}
	stateChanged := st.State != h.shown.State || !h.drawn
	h.shown, h.drawn = st, true
	switch {
	case st.State == core.Failed && st.Error != nil:
		h.setError(explain(st.Error, h.u.service))
	case h.userErr != "":
		h.setError(h.userErr)
	default:
		h.setError("")
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
	if st.State == core.Running {
		member, why := h.member(rt, st)
		setText(h.route, "Route: "+rt.name+" — now via "+member)
		setText(h.reason, why)
		h.reason.Show()
	} else {
		setText(h.route, "Route: not connected")
		h.reason.Hide()
	}
	// A new second of the same rates (an idle minute) draws nothing.
	if !h.graph.Shows(s.Series) {
		h.graph.SetSamples(s.Series)
	}
	setText(h.rates, fmt.Sprintf("Now  ↑ %s   ↓ %s", rateString(s.Rate.Up), rateString(s.Rate.Down)))
	setText(h.totals, fmt.Sprintf("This session  ↑ %s   ↓ %s", bytesString(s.Up), bytesString(s.Down)))
	// With the service the figures are the service's; with the core in
	// this process, the core's and the window's together. Memory moves
	// by a few KiB all the time, and every change repaints the window:
	// look every few seconds, in whole MiB.
	if now := time.Now(); now.Sub(h.memAt) >= 3*time.Second {
		h.memAt = now
		setText(h.memCore, fmt.Sprintf("Memory: Go heap %s · RSS %s", mibString(s.Memory.Heap), mibString(s.Memory.RSS)))
		if h.u.service {
			w := stats.ReadMemory()
			setText(h.memWindow, fmt.Sprintf("(the service; this window: RSS %s)", mibString(w.RSS)))
		} else {
			setText(h.memWindow, "(core and window share one process)")
		}
	}
	conns := fmt.Sprintf("Connections: %d", s.Connections)
	if s.Panics > 0 {
		// Each was one flow's internal error; that flow was closed and the
		// rest went on. The Logs tab has the first one's stack.
		conns += fmt.Sprintf(" · internal errors recovered: %d (see Logs)", s.Panics)
	}
	setText(h.conns, conns)
}

// drawState shows the switch and the state line for st.
func (h *homeView) drawState(st api.Status) {
	switch st.State {
	case core.Running:
		h.toggle.SetText("Disconnect")
		h.toggle.SetIcon(theme.MediaStopIcon())
		h.toggle.Importance = widget.DangerImportance
		h.toggle.Enable()
		h.state.Text = "Connected"
		h.state.Color = colorOK
		setText(h.listen, "Local proxy on "+st.Listen+" (SOCKS5 and HTTP)")
	case core.Starting:
		h.toggle.SetText("Connecting…")
		h.toggle.Disable()
		h.state.Text = "Connecting…"
		h.state.Color = theme.Color(theme.ColorNameForeground)
	default:
		h.toggle.SetText("Connect")
		h.toggle.SetIcon(theme.MediaPlayIcon())
		h.toggle.Importance = widget.HighImportance
		h.toggle.Enable()
		h.state.Text = "Disconnected"
		h.state.Color = theme.Color(theme.ColorNameForeground)
		if st.State == core.Failed {
			h.state.Text = "Not connected: error"
			h.state.Color = theme.Color(theme.ColorNameError)
		}
		setText(h.listen, "")
	}
	h.toggle.Refresh()
	h.state.Refresh()
}

// setText sets l's text when it differs: SetText always redraws.
func setText(l *widget.Label, s string) {
	if l.Text != s {
		l.SetText(s)
	}
}

// member names what carries traffic now and why: the failover group's
// current member and its last switch, or the single server.
func (h *homeView) member(rt route, st api.Status) (string, string) {
	groups := h.u.groups()
	name := st.Member
	if name == "" {
		name = st.Outbound
		if len(groups) > 0 {
			name = "no usable server right now"
		}
	}
	label := name
	for _, n := range rt.nodes {
		if n.Name == name {
			label = fmt.Sprintf("%s (%s)", name, protocolLabel(n))
		}
	}
	for _, g := range groups {
		for _, m := range g.Members {
			if m.Name == g.Current && m.RTT > 0 {
				label += fmt.Sprintf(", %d ms", m.RTT.Milliseconds())
			}
		}
	}
	if sw := h.u.Switches(); len(sw) > 0 {
		last := sw[len(sw)-1]
		return label, last.Reason + ", " + last.Time.Local().Format("15:04")
	}
	switch {
	case st.Reason != "":
		return label, st.Reason
	case len(rt.nodes) > 1:
		return label, "first in the failover order, healthy"
	}
	return label, "the only server of the route"
}

var colorOK = color.NRGBA{R: 0x2e, G: 0xa0, B: 0x43, A: 0xff}
