package window

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
)

// exitBackend answers Exit as the core would (its checks are tested in
// core: TestExit); the rest is the harness's real backend.
type exitBackend struct {
	api.Backend
	calls atomic.Int32
	fail  atomic.Bool
}

func (b *exitBackend) Exit(ctx context.Context, refresh bool) (*api.Exit, error) {
	b.calls.Add(1)
	if b.fail.Load() {
		return nil, &api.Error{Code: api.CodeExitLookup, Message: "no trace service answered"}
	}
	return &api.Exit{IP: "203.0.113.7", Country: "DE", Via: "fra-1", CheckedAt: time.Now()}, nil
}

// TestExitLine: Home's exit line asks for the exit once per run and member, shows the
// address with the country's flag, says so when the check fails, and
// hides the line when not connected.
func TestExitLine(t *testing.T) {
	eb := &exitBackend{}
	h := newHarnessWith(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link), func(b api.Backend) api.Backend {
		eb.Backend = b
		return eb
	})
	e := newExitLine(h.ui) // Home's own line follows the stopped core
	st := api.Status{State: core.Running, Since: time.Now(), Outbound: "proxy", Member: "fra-1"}
	e.update(st, true)
	h.waitFor("the exit to show", func() bool { return e.label.Text == "Exit 203.0.113.7 · 🇩🇪 DE" })
	if !e.label.Visible() {
		t.Error("the exit line is hidden while connected")
	}
	e.update(st, true)
	h.pump()
	if n := eb.calls.Load(); n != 1 {
		t.Errorf("the same run and member asked %d times, want 1", n)
	}
	eb.fail.Store(true)
	st.Member = "ams-2"
	e.update(st, true) // a failover: asked again
	h.waitFor("the failure to show", func() bool { return e.label.Text == "Exit: could not be checked" })
	if n := eb.calls.Load(); n != 2 {
		t.Errorf("after a member change asked %d times, want 2", n)
	}
	e.update(st, false)
	if e.label.Visible() {
		t.Error("the exit line is shown while disconnected")
	}
}
