package window

import (
	"strings"

	"github.com/skiffvpn/skiff/app/sysproxy"
	"github.com/skiffvpn/skiff/core/api"
)

// sysKeeper makes this session's proxy settings follow the core: pointed
// at the local proxy while the core runs a route in system-proxy mode
// (whoever runs the core: the service or this process), put back
// otherwise, and when the window's process ends. Nil when a tray process
// beside the window owns the settings (Options.TrayProcess).
type sysKeeper struct{ k *sysproxy.Keeper }

func newSysKeeper(p *sysproxy.Proxy) *sysKeeper { return &sysKeeper{sysproxy.NewKeeper(p)} }

// follow asks for the settings that go with st.
func (k *sysKeeper) follow(st api.Status) {
	if k != nil {
		k.k.Follow(st.SystemProxyAddr())
	}
}

// describe says what the settings are, for Home: "" when off and fine.
func (k *sysKeeper) describe() (string, bool) {
	if k == nil {
		return "", false
	}
	on, names, err := k.k.State()
	switch {
	case err != nil:
		return tr("sysproxy.failed", M{"Err": err.Error()}), true
	case on != "":
		var where []string
		for _, n := range names {
			where = append(where, storeName(n))
		}
		return tr("sysproxy.set", M{"Addr": on, "Where": strings.Join(where, ", ")}), false
	}
	return "", false
}

// storeName is one of sysproxy's stores as Home names it.
func storeName(n string) string {
	switch n {
	case "gnome":
		return tr("sysproxy.store.gnome")
	case "kde":
		return tr("sysproxy.store.kde")
	case "shell":
		return tr("sysproxy.store.shell", M{"File": sysproxy.EnvName})
	case "wininet":
		return tr("sysproxy.store.wininet")
	case "networksetup":
		return tr("sysproxy.store.networksetup")
	}
	return n
}

// stop ends the keeper and puts the settings back; the process is ending.
func (k *sysKeeper) stop() {
	if k != nil {
		k.k.Stop()
	}
}
