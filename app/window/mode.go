package window

import (
	"context"
	"time"

	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
)

// changeMode makes mode the user's. While connected the core is asked to
// apply it (api.Backend.SetMode: the system proxy is set or put back at
// once, TUN mode connects again; stopped, nothing changes but the
// choice); a mode it refuses is not kept, the
// dropdown goes back, and the note says why.
func (h *homeView) changeMode(mode string) {
	p := h.u.Prefs()
	was := p.Mode
	if was == "" {
		was = plan.ModeProxy
	}
	if was == mode || h.changing {
		return
	}
	save := func() {
		p := h.u.Prefs()
		p.Mode = mode
		h.u.setPrefs(p)
	}
	// The core says whether there is a connection to change (stopped,
	// SetMode does nothing): the window's view of it may be a tick old.
	h.changing = true
	var (
		res *api.ModeResult
		err error
	)
	h.u.background(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		res, err = h.u.b.SetMode(ctx, api.ModeRequest{Mode: mode})
	}, func() {
		h.changing = false
		if err != nil {
			e := api.Wrap(err)
			why := e.Message
			if w := explain(e, h.u.service); e.Code != api.CodeBadRequest && w != tr("explain.unknown") {
				why = w
			}
			h.setMode(was)
			h.modeNote.SetText(tr("mode.refused", M{"Mode": modeLabels()[modeIndex(mode)], "Why": why}))
			h.modeNote.Show()
			h.u.refresh()
			return
		}
		save()
		h.setMode(mode)
		if res.Reconnected {
			h.modeNote.SetText(tr("mode.reconnected", M{"Mode": modeLabels()[modeIndex(mode)]}))
			h.modeNote.Show()
		}
		h.u.refresh() // the system proxy follows the route's new mode
	})
}
