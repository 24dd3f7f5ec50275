package window

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"github.com/skiffvpn/skiff/app/exitline"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
)

// trayHost is the OS's side of the tray: it keeps what the window puts
// there.
type trayHost struct {
	menu *fyne.Menu
	icon fyne.Resource
}

func (h *trayHost) SetSystemTrayMenu(m *fyne.Menu)    { h.menu = m }
func (h *trayHost) SetSystemTrayIcon(r fyne.Resource) { h.icon = r }
func (h *trayHost) SetSystemTrayWindow(fyne.Window)   {}

// TestTrayRouting: the tray's Routing submenu offers the three routings,
// checks the one in force, and a choice reaches the backend.
func TestTrayRouting(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link))
	host := &trayHost{}
	tr := newTray(h.ui, host)
	tr.update(h.ui.status())
	var sub *fyne.Menu
	for _, it := range host.menu.Items {
		if it.Label == "Routing" {
			sub = it.ChildMenu
		}
	}
	if sub == nil || len(sub.Items) != 3 {
		t.Fatalf("no Routing submenu of three in %+v", host.menu.Items)
	}
	checked := func() (out []string) {
		for _, it := range sub.Items {
			if it.Checked {
				out = append(out, it.Label)
			}
		}
		return out
	}
	if c := checked(); len(c) != 1 || c[0] != "Rule" {
		t.Errorf("checked at first: %q, want Rule", c)
	}
	sub.Items[1].Action() // Global
	h.waitFor("global to be saved", func() bool {
		p, _, _ := h.ui.b.Profile(context.Background())
		return p.Routing == string(core.RoutingGlobal) && !h.ui.home.controls.busy
	})
	tr.update(h.ui.status())
	if c := checked(); len(c) != 1 || c[0] != "Global" {
		t.Errorf("checked after Global: %q", c)
	}
}

// TestTrayExit: while connected the tray's menu has a disabled line with
// the exit (as Home words it, flags as the OS's menu draws them); a
// disconnected tray has none.
func TestTrayExit(t *testing.T) {
	eb := &exitBackend{}
	h := newHarnessWith(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link), func(b api.Backend) api.Backend {
		eb.Backend = b
		return eb
	})
	host := &trayHost{}
	tr := newTray(h.ui, host)
	exitItem := func() *fyne.MenuItem {
		for _, it := range host.menu.Items {
			if strings.HasPrefix(it.Label, "Exit") {
				return it
			}
		}
		return nil
	}
	tr.update(api.Status{State: core.Stopped})
	if it := exitItem(); it != nil {
		t.Fatalf("disconnected, the menu has %q", it.Label)
	}
	running := api.Status{State: core.Running, Since: time.Now(), Outbound: "auto", Member: "fra-1"}
	tr.update(running)
	want := exitline.MenuLabel("Exit 203.0.113.7 · 🇩🇪 DE")
	h.waitFor("the exit in the menu", func() bool { it := exitItem(); return it != nil && it.Label == want })
	if !exitItem().Disabled {
		t.Error("the exit line can be clicked")
	}
	tr.update(running)
	h.pump()
	if n := eb.calls.Load(); n != 1 {
		t.Errorf("the same run asked %d times, want 1", n)
	}
	tr.update(api.Status{State: core.Stopped})
	if it := exitItem(); it != nil {
		t.Errorf("after a disconnect the menu has %q", it.Label)
	}
}
