package window

import (
	"context"
	"testing"

	"fyne.io/fyne/v2"

	"github.com/skiffvpn/skiff/core"
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
