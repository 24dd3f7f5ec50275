package window

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/app/sysproxy"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
)

// sysKeeper makes this session's proxy settings follow the core: pointed
// at the local proxy while the core runs a route in system-proxy mode
// (whoever runs the core: the service or this process), put back
// otherwise, and when the window's process ends. At its start it puts
// back what a killed window left. The settings tools take tens of
// milliseconds each, so it works on a goroutine of its own, and the
// newest wish wins.
type sysKeeper struct {
	p        *sysproxy.Proxy
	wish     chan string // the address wanted; "" for off
	done     chan struct{}
	stopOnce sync.Once

	sent string // the last wish sent (UI thread only)

	mu     sync.Mutex
	closed bool     // stop was called: no more wishes
	on     string   // the address the settings point at; "" when off
	names  []string // the stores set
	err    error    // the last failure, shown on Home
}

func newSysKeeper(p *sysproxy.Proxy) *sysKeeper {
	k := &sysKeeper{p: p, wish: make(chan string, 1), done: make(chan struct{})}
	go k.run()
	return k
}

// wanted is the address the system proxy should point at for status st.
func wanted(st api.Status) string {
	if st.State != core.Running || st.Route == nil || st.Route.Mode != plan.ModeSystemProxy {
		return ""
	}
	return st.Listen
}

// follow asks for the settings that go with st. It runs on the UI thread.
func (k *sysKeeper) follow(st api.Status) {
	w := wanted(st)
	if w == k.sent {
		return
	}
	k.sent = w
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	select {
	case <-k.wish: // an older wish not yet taken: the newest wins
	default:
	}
	k.wish <- w // the only sender, with the buffer emptied: never blocks
}

func (k *sysKeeper) run() {
	defer close(k.done)
	ctx := context.Background()
	if _, err := k.p.Recover(ctx); err != nil {
		k.set("", nil, err)
	}
	for w := range k.wish {
		k.mu.Lock()
		on := k.on
		k.mu.Unlock()
		if w == on {
			continue
		}
		if w == "" {
			k.set("", nil, k.p.Disable(ctx))
			continue
		}
		addr, err := netip.ParseAddrPort(w)
		if err != nil {
			k.set("", nil, err)
			continue
		}
		names, err := k.p.Enable(ctx, sysproxy.Config{Addr: addr})
		if err != nil {
			k.set("", nil, err)
			continue
		}
		k.set(w, names, nil)
	}
}

func (k *sysKeeper) set(on string, names []string, err error) {
	k.mu.Lock()
	k.on, k.names, k.err = on, names, err
	k.mu.Unlock()
}

// describe says what the settings are, for Home: "" when off and fine.
func (k *sysKeeper) describe() (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.err != nil:
		return tr("sysproxy.failed", M{"Err": k.err.Error()}), true
	case k.on != "":
		var where []string
		for _, n := range k.names {
			where = append(where, storeName(n))
		}
		return tr("sysproxy.set", M{"Addr": k.on, "Where": strings.Join(where, ", ")}), false
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
// Calls after the first do nothing.
func (k *sysKeeper) stop() {
	k.stopOnce.Do(func() {
		k.mu.Lock()
		k.closed = true
		close(k.wish)
		k.mu.Unlock()
		<-k.done
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		k.p.Disable(ctx)
	})
}
