package window

import (
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
)

// TestFlowNoteClearsAfterGoodTraffic: the "connections are failing" note
// has Details with the core's words, and goes once a MiB has come down
// well after it, not before.
func TestFlowNoteClearsAfterGoodTraffic(t *testing.T) {
	h := newHarness(t, Prefs{}, addLinks(t, hy2Link))
	home := h.ui.home
	home.noteFailure(api.Notice{Kind: api.NoticeFlowFailed, Time: time.Now(), Message: "proxy to 1.2.3.4:443: dial: connection refused",
		Error: &api.Error{Code: api.CodeInternal, Message: "proxy to 1.2.3.4:443: dial: connection refused"}})
	if home.FlowNote() == "" || home.flowWhy == "" {
		t.Fatalf("note %q, details %q", home.FlowNote(), home.flowWhy)
	}
	st := api.Status{State: core.Running}
	home.update(st, core.Snapshot{Down: 100})
	home.update(st, core.Snapshot{Down: 100 + 4<<20}) // much traffic, but at once
	if home.FlowNote() == "" {
		t.Fatal("the note went right after the failure")
	}
	home.flowAt = time.Now().Add(-goodTrafficAfter)
	home.update(st, core.Snapshot{Down: 100 + 4<<20 + 10})
	if home.FlowNote() != "" {
		t.Fatal("the note stays after good traffic")
	}
}
