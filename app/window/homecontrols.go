package window

import (
	"context"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
)

// homeControls are Home's switches, kept apart from the rest of Home: the
// routing as a segmented control (Rule | Global | Direct, applied at once
// through api.Backend.SetRouting, which the core decides) and the mode as
// two toggles, System proxy and VPN (TUN), both off being the local proxy
// alone (api.Backend.SetMode through homeView.changeMode).
type homeControls struct {
	h   *homeView
	obj fyne.CanvasObject

	routing     []*widget.Button // one per core.Routings
	routingNote *widget.Label    // what the routing shown does, or why a change was refused
	shown       core.Routing     // the routing the buttons show
	refused     bool             // routingNote says why a change was refused
	busy        bool             // a routing change is asked of the core

	sysProxy, vpn *widget.Check
	vpnOn         *widget.Label // in TUN mode: what that means
}

// routingWords are each routing's message keys: its label, and what it
// does.
var routingWords = map[core.Routing][2]string{
	core.RoutingRule:   {"routing.rule", "routing.ruleNote"},
	core.RoutingGlobal: {"routing.global", "routing.globalNote"},
	core.RoutingDirect: {"routing.direct", "routing.directNote"},
}

// routingLabel is m as shown.
func routingLabel(m core.Routing) string { return tr(routingWords[m][0]) }

// routingNote says what m does.
func routingNote(m core.Routing) string { return tr(routingWords[m][1]) }

func newHomeControls(h *homeView) *homeControls {
	c := &homeControls{h: h, shown: core.RoutingRule}
	var seg []fyne.CanvasObject
	for _, m := range core.Routings {
		b := widget.NewButton(routingLabel(m), func() { c.setRouting(m) })
		c.routing = append(c.routing, b)
		seg = append(seg, b)
	}
	c.routingNote = widget.NewLabel(routingNote(c.shown))
	c.routingNote.Wrapping = fyne.TextWrapWord
	c.routingNote.TextStyle.Italic = true
	c.sysProxy = widget.NewCheck(tr("home.systemProxy"), func(on bool) {
		if on {
			c.toMode(plan.ModeSystemProxy)
		} else {
			c.toMode(plan.ModeProxy)
		}
	})
	c.vpn = widget.NewCheck(tr("home.vpn"), func(on bool) {
		if on {
			c.toMode(plan.ModeTUN)
		} else {
			c.toMode(plan.ModeProxy)
		}
	})
	c.vpnOn = widget.NewLabel("")
	c.vpnOn.Wrapping = fyne.TextWrapWord
	c.vpnOn.Importance = widget.SuccessImportance
	c.vpnOn.Hide()
	c.showRouting(c.shown)
	// One form, so that the labels line up; the note says what the
	// routing does, under it.
	form := container.New(layout.NewFormLayout(),
		widget.NewLabel(tr("home.routing")), container.NewHBox(container.NewGridWithColumns(len(seg), seg...)),
		layout.NewSpacer(), c.routingNote,
		widget.NewLabel(tr("home.mode")), container.NewHBox(c.sysProxy, c.vpn),
	)
	c.obj = container.NewVBox(form, c.vpnOn)
	return c
}

// showRouting marks m's button.
func (c *homeControls) showRouting(m core.Routing) {
	c.shown = m
	for i, b := range c.routing {
		want := widget.MediumImportance
		if core.Routings[i] == m {
			want = widget.HighImportance
		}
		if b.Importance != want {
			b.Importance = want
			b.Refresh()
		}
	}
	if !c.refused {
		setText(c.routingNote, routingNote(m))
	}
}

// setRouting asks the core for m: saved, and applied at once to new flows
// when connected. A refusal puts the buttons back and says why.
func (c *homeControls) setRouting(m core.Routing) {
	if c.busy || m == c.shown {
		return
	}
	was := c.shown
	c.busy, c.refused = true, false
	c.showRouting(m)
	var err error
	u := c.h.u
	u.background(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err = u.b.SetRouting(ctx, api.RoutingRequest{Routing: string(m)})
	}, func() {
		c.busy = false
		if err != nil {
			e := api.Wrap(err)
			why := e.Message
			if e.Code == api.CodeNoServer || e.Code == api.CodeUnavailable || e.Code == api.CodeForbidden {
				why = explain(e, u.service)
			}
			c.showRouting(was)
			c.refused = true
			c.routingNote.SetText(tr("routing.refused", M{"Why": why}))
			return
		}
		u.reloadProfile() // the saved routing, which a stopped core shows
		u.pullLive()
	})
}

// toMode is a toggle's change: the mode it asks for, unless a change is
// under way (the toggles then show what is).
func (c *homeControls) toMode(mode string) {
	if c.h.changing {
		c.showMode(c.h.u.Prefs().Mode)
		return
	}
	if mode == plan.ModeTUN {
		if ok, why := tunAvailable(); !ok {
			c.showMode(c.h.u.Prefs().Mode)
			c.h.modeNote.SetText(why)
			c.h.modeNote.Show()
			return
		}
	}
	c.showMode(mode)
	c.h.changeMode(mode)
}

// showMode sets the toggles for mode without asking for a change.
func (c *homeControls) showMode(mode string) {
	for _, t := range []struct {
		ch *widget.Check
		on bool
	}{{c.sysProxy, mode == plan.ModeSystemProxy}, {c.vpn, mode == plan.ModeTUN}} {
		if t.ch.Checked != t.on {
			t.ch.Checked = t.on // not SetChecked: that would call OnChanged
			t.ch.Refresh()
		}
	}
}

// update shows st: the routing that runs (else the saved one) and, in TUN
// mode, that the machine's traffic goes through Skiff.
func (c *homeControls) update(st api.Status) {
	if !c.busy {
		c.h.u.mu.Lock()
		p := c.h.u.prof
		c.h.u.mu.Unlock()
		if m := api.RoutingOf(st, p); m != c.shown {
			c.refused = false
			c.showRouting(m)
		}
	}
	on := st.State == core.Running && st.TUN != ""
	if on {
		setText(c.vpnOn, tr("home.vpnOn", M{"Device": st.TUN}))
	}
	if on != c.vpnOn.Visible() {
		c.vpnOn.Hidden = !on
		c.vpnOn.Refresh()
	}
}
