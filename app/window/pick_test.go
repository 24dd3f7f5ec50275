package window

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
)

const hy2Second = "hysteria2://secret@127.0.0.1:7/?insecure=1#Hy2 Second"

// TestUseSwitchesLive: "Use" on a node while connected moves the route to
// it without a new connection (the core's state has not changed since it
// connected), and says so; picking a select group's member does the same
// in the Routes tab.
func TestUseSwitchesLive(t *testing.T) {
	for _, viaGroup := range []bool{false, true} {
		h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, func(p *profile.Profile) {
			addLinks(t, hy2Link, hy2Second)(p)
			p.Selected = p.Nodes[0].ID
			if viaGroup {
				p.Groups = []*profile.Group{{ID: "gs", Name: "Pick", Type: profile.GroupSelector, Members: []string{p.Nodes[0].ID, p.Nodes[1].ID}}}
				p.Selected = "gs"
			}
		})
		test.Tap(h.ui.home.toggle)
		h.waitFor("the core to run", func() bool { return h.ui.home.toggle.Text == "Disconnect" })
		before := h.ctrl.Status()
		second := h.ui.prof.Nodes[1].ID
		said := func() string { return h.ui.profiles.status.Text }
		if viaGroup {
			h.ui.pick(api.SelectRequest{Group: "gs", ID: second}, "Hy2 Second", h.ui.routes.sayNote)
			said = func() string { return h.ui.routes.note.Text }
		} else {
			h.ui.profiles.use(second)
		}
		h.waitFor("the pick's outcome", func() bool { return strings.Contains(said(), "Switched to Hy2 Second") })
		st := h.ctrl.Status()
		if st.State != core.Running || !st.Since.Equal(before.Since) {
			t.Errorf("group %v: state %v since %v, was since %v: it reconnected", viaGroup, st.State, st.Since, before.Since)
		}
		if st.Member != "Hy2 Second" {
			t.Errorf("group %v: new flows go to %q, want Hy2 Second", viaGroup, st.Member)
		}
		if strings.Contains(said(), "Disconnect") {
			t.Errorf("group %v: still asks to reconnect: %q", viaGroup, said())
		}
	}
}
