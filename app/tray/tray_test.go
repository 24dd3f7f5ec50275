package tray

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/app/exitline"
	"github.com/skiffvpn/skiff/app/guiprefs"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
)

// fakeService is the service as the tray sees it: a Watch stream the
// test feeds, an empty profile and an exit as the core would answer.
type fakeService struct {
	api.Backend // the rest: unused (a call panics)
	notices     chan api.Notice
	exits       atomic.Int32
}

func (f *fakeService) Watch(ctx context.Context, o api.WatchOptions) (<-chan api.Notice, error) {
	return f.notices, nil
}

func (f *fakeService) Profile(ctx context.Context) (*profile.Profile, string, error) {
	return &profile.Profile{}, "1", nil
}

func (f *fakeService) Exit(ctx context.Context, refresh bool) (*api.Exit, error) {
	f.exits.Add(1)
	return &api.Exit{IP: "203.0.113.7", Country: "DE", Via: "fra-1", CheckedAt: time.Now()}, nil
}

// TestTrayExit runs the tray's menu (systray's items without a tray
// host) on a fake service: connected, it asks for the exit once per run
// and shows the line; disconnected, it shows none.
func TestTrayExit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systray's items work without a tray host on Linux only")
	}
	dir := t.TempDir()
	if err := guiprefs.Save(dir, guiprefs.Prefs{Language: "en"}); err != nil {
		t.Fatal(err)
	}
	f := &fakeService{notices: make(chan api.Notice)}
	tr := newTray(context.Background(), Options{Backend: f, PrefsDir: dir})
	tr.ready()
	defer func() {
		tr.cancel()
		close(f.notices) // as the client's stream ends with ctx
		tr.wg.Wait()
		tr.sys.Stop()
	}()
	shown := func() view {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.shown == nil {
			return view{}
		}
		return *tr.shown
	}
	waitFor := func(what string, ok func(view) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(shown()); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s: the menu shows %+v", what, shown())
			}
		}
	}
	status := func(st api.Status) { f.notices <- api.Notice{Kind: api.NoticeStatus, Status: &st} }

	status(api.Status{State: core.Stopped})
	if v := shown(); v.Exit != "" {
		t.Errorf("disconnected, the menu shows %q", v.Exit)
	}
	run := api.Status{State: core.Running, Since: time.Now(), Outbound: "auto", Member: "fra-1"}
	status(run)
	want := exitline.MenuLabel("Exit 203.0.113.7 · 🇩🇪 DE")
	waitFor("exit line", func(v view) bool { return v.Exit == want })
	status(run)
	if n := f.exits.Load(); n != 1 {
		t.Errorf("the same run asked %d times, want 1", n)
	}
	status(api.Status{State: core.Stopped})
	waitFor("disconnected menu", func(v view) bool { return !v.Running })
	if v := shown(); v.Exit != "" {
		t.Errorf("after a disconnect the menu shows %q", v.Exit)
	}
	run.Since = run.Since.Add(time.Minute) // a reconnect asks again
	status(run)
	waitFor("exit line after a reconnect", func(v view) bool { return v.Exit == want })
	if n := f.exits.Load(); n != 2 {
		t.Errorf("two runs asked %d times, want 2", n)
	}
}
