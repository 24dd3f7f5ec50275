package window

import (
	"context"
	"time"

	"github.com/skiffvpn/skiff/core/api"
)

// pick asks the core to make r the pick (api.Backend.Select: saved, and
// applied at once when connected) and then says, through say, what
// happened, in the window's words: name is what was picked.
func (u *UI) pick(r api.SelectRequest, name string, say func(msg string, bad bool)) {
	var (
		res *api.SelectResult
		err error
	)
	u.background(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err = u.b.Select(ctx, r)
	}, func() {
		u.reloadProfile()
		say(pickWords(res, err, name))
		u.pullLive()
	})
}

// pickWords says how a pick took effect.
func pickWords(res *api.SelectResult, err error, name string) (string, bool) {
	switch {
	case err != nil:
		e := api.Wrap(err)
		why := e.Message // the core's words name what is wrong with the pick
		switch e.Code {
		case api.CodeNoServer, api.CodeUnavailable, api.CodeForbidden:
			why = explain(e, false)
		}
		return tr("pick.failed", M{"Name": name, "Err": why}), true
	case res.Reconnected:
		return tr("pick.reconnected", M{"Name": name}), false
	case res.Live && res.Closed > 0:
		return trN("pick.liveClosed", res.Closed, M{"Name": name}), false
	case res.Live:
		return tr("pick.live", M{"Name": name}), false
	}
	return tr("pick.saved", M{"Name": name}), false
}
