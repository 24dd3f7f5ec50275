package window

import (
	"errors"
	"net/url"

	"fyne.io/fyne/v2/dialog"

	"github.com/skiffvpn/skiff/app/deeplink"
)

// Handoff is what a launch of the window asked for (its own, or a later
// one's handed over by package instance): the window comes to the front,
// and each import link among args (package deeplink) is offered as a
// subscription to add, which the user confirms. Other arguments are
// ignored. Safe from any goroutine.
func (u *UI) Handoff(args []string) {
	u.log.Info("app: asked to show the window", "args", len(args))
	u.do(func() {
		u.showWindow()
		for _, a := range args {
			l, err := deeplink.Parse(a)
			switch {
			case errors.Is(err, deeplink.ErrNotLink):
			case err != nil:
				u.tabs.SelectIndex(1)
				u.profiles.say(tr("link.bad", M{"Err": err.Error()}), true)
			default:
				u.offerLink(l)
			}
		}
	})
}

// offerLink asks whether to add the subscription l names. The dialog shows
// the host and the site's title, never the URL's path or token.
func (u *UI) offerLink(l deeplink.Link) {
	host := l.URL
	if p, err := url.Parse(l.URL); err == nil {
		host = p.Host
	}
	name := l.Name
	if name == "" {
		name = host
	}
	d := dialog.NewConfirm(tr("link.title"), tr("link.confirm", M{"Name": name, "Host": host}), func(ok bool) {
		if ok {
			u.tabs.SelectIndex(1)
			u.profiles.addSubscription(l.URL, l.Name)
		}
	}, u.win)
	d.SetConfirmText(tr("link.add"))
	d.SetDismissText(tr("dialog.cancel"))
	d.Show()
}
