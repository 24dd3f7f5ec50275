package exitline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/internal/i18n"
)

func words(lang i18n.Language) Words {
	l := i18n.New(lang)
	return func(key string, data map[string]any) string { return l.T(key, data) }
}

func TestText(t *testing.T) {
	en := words(i18n.Languages[0])
	for _, tt := range []struct {
		name string
		ex   *api.Exit
		err  error
		want string
	}{
		{"a country", &api.Exit{IP: "203.0.113.7", Country: "DE"}, nil, "Exit 203.0.113.7 · 🇩🇪 DE"},
		{"IPv6", &api.Exit{IP: "2001:db8::1", Country: "JP"}, nil, "Exit 2001:db8::1 · 🇯🇵 JP"},
		{"country unknown", &api.Exit{IP: "192.0.2.1", Country: "XX"}, nil, "Exit 192.0.2.1 · XX"},
		{"Tor", &api.Exit{IP: "192.0.2.1", Country: "T1"}, nil, "Exit 192.0.2.1 · T1"},
		{"no trace service answered", nil, &api.Error{Code: api.CodeExitLookup}, "Exit: could not be checked"},
		{"not connected", nil, api.ErrNotConnected, "Exit: could not be checked"},
		{"the service went", nil, errors.New("dial unix: connection refused"), "Exit: could not be checked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(en, tt.ex, tt.err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := Checking(en); got != "Exit: checking…" {
		t.Errorf("Checking: %q", got)
	}
	// Every language has the line's words (TestBundlesComplete checks
	// the keys; here, that they are filled in).
	for _, lang := range i18n.Languages {
		w := words(lang)
		if got := Text(w, &api.Exit{IP: "203.0.113.7", Country: "DE"}, nil); !strings.Contains(got, "203.0.113.7") || !strings.Contains(got, "🇩🇪 DE") {
			t.Errorf("%s: %q", lang.Code, got)
		}
	}
}

func TestFlag(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"DE", "🇩🇪"}, {"JP", "🇯🇵"}, {"XX", ""}, {"T1", ""}, {"de", ""}, {"D", ""}, {"DEU", ""}, {"", ""},
	} {
		if got := Flag(c.in); got != c.want {
			t.Errorf("Flag(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMenuLabel(t *testing.T) {
	for _, c := range []struct{ in, windows string }{
		{"Exit 203.0.113.7 · 🇩🇪 DE", "Exit 203.0.113.7 · DE"},
		{"🇯🇵 Tokyo", "Tokyo"},
		{"🇯🇵Tokyo", "Tokyo"},
		{"Tokyo 🇯🇵", "Tokyo"},
		{"HK 🇭🇰 01", "HK 01"},
		{"🇺🇸 🇯🇵 Relay", "Relay"},
		{"Via 🇭🇰 Pick", "Via Pick"},
		{"Osaka", "Osaka"},
		{"Москва 🇷🇺", "Москва"},
		{"🇩🇪", "🇩🇪"}, // only a flag: its letters are its name
		{"", ""},
	} {
		if got := menuLabel(c.in, true); got != c.in {
			t.Errorf("menuLabel(%q, flags drawn) = %q", c.in, got)
		}
		if got := menuLabel(c.in, false); got != c.windows {
			t.Errorf("menuLabel(%q, no flags) = %q, want %q", c.in, got, c.windows)
		}
	}
}

func TestKey(t *testing.T) {
	since := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	run := api.Status{State: core.Running, Since: since, Outbound: "auto", Member: "fra-1"}
	if Key(api.Status{State: core.Stopped, Since: since, Member: "fra-1"}) != "" {
		t.Error("a stopped core has a key")
	}
	keys := map[string]bool{Key(run): true}
	for _, st := range []api.Status{
		{State: core.Running, Since: since.Add(time.Second), Outbound: "auto", Member: "fra-1"}, // reconnected
		{State: core.Running, Since: since, Outbound: "auto", Member: "ams-2"},                  // a failover
		{State: core.Running, Since: since, Outbound: "pick", Member: "fra-1"},                  // another route
	} {
		k := Key(st)
		if k == "" || keys[k] {
			t.Errorf("%+v: key %q is empty or not new", st, k)
		}
		keys[k] = true
	}
	if Key(run) != Key(run) {
		t.Error("the same run has two keys")
	}
}

// fakeExit answers Exit as the core would, once release says so; an ask
// whose context ends first returns its error.
type fakeExit struct {
	mu      sync.Mutex
	calls   int
	fail    bool
	release chan struct{}
}

func (f *fakeExit) Exit(ctx context.Context, refresh bool) (*api.Exit, error) {
	f.mu.Lock()
	f.calls++
	fail, release := f.fail, f.release
	f.mu.Unlock()
	if refresh {
		return nil, errors.New("a Line asked for a refresh")
	}
	select {
	case <-release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if fail {
		return nil, &api.Error{Code: api.CodeExitLookup, Message: "no trace service answered"}
	}
	return &api.Exit{IP: "203.0.113.7", Country: "DE", Via: "fra-1"}, nil
}

// lineRig is a Line whose asks run on goroutines the test waits for.
type lineRig struct {
	*Line
	f      *fakeExit
	wg     sync.WaitGroup
	mu     sync.Mutex
	shown  []string
	ctx    context.Context
	cancel context.CancelFunc
}

func newRig() *lineRig {
	r := &lineRig{f: &fakeExit{release: make(chan struct{})}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.Line = New(Options{
		Exit:       r.f.Exit,
		Words:      words(i18n.Languages[0]),
		Background: Goroutines(r.ctx, &r.wg),
		Show: func(s string) {
			r.mu.Lock()
			r.shown = append(r.shown, s)
			r.mu.Unlock()
		},
	})
	return r
}

func (r *lineRig) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.shown)
}

func TestLine(t *testing.T) {
	const checking, exit, unknown = "Exit: checking…", "Exit 203.0.113.7 · 🇩🇪 DE", "Exit: could not be checked"
	t.Run("asks once per key", func(t *testing.T) {
		r := newRig()
		close(r.f.release)
		r.Follow("run1")
		r.wg.Wait()
		r.Follow("run1")
		r.wg.Wait()
		if got, want := r.lines(), []string{checking, exit}; !slices.Equal(got, want) {
			t.Errorf("shown %q, want %q", got, want)
		}
		r.Relabel()
		r.Follow("")
		if got, want := r.lines(), []string{checking, exit, exit, ""}; !slices.Equal(got, want) {
			t.Errorf("after Relabel and a disconnect: %q, want %q", got, want)
		}
		if r.f.calls != 1 {
			t.Errorf("%d asks, want 1", r.f.calls)
		}
	})
	t.Run("a failure", func(t *testing.T) {
		r := newRig()
		r.f.fail = true
		close(r.f.release)
		r.Follow("run1")
		r.wg.Wait()
		if got, want := r.lines(), []string{checking, unknown}; !slices.Equal(got, want) {
			t.Errorf("shown %q, want %q", got, want)
		}
	})
	t.Run("a disconnect drops the ask", func(t *testing.T) {
		r := newRig()
		r.Follow("run1")
		r.Follow("")
		r.wg.Wait() // the ask ended with its context
		if got, want := r.lines(), []string{checking, ""}; !slices.Equal(got, want) {
			t.Errorf("shown %q, want %q", got, want)
		}
	})
	t.Run("only the last ask counts", func(t *testing.T) {
		r := newRig()
		r.Follow("fra-1")
		r.Follow("ams-2") // a failover, and back
		r.Follow("fra-1")
		close(r.f.release)
		r.wg.Wait()
		if got, want := r.lines(), []string{checking, checking, checking, exit}; !slices.Equal(got, want) {
			t.Errorf("shown %q, want %q", got, want)
		}
		if r.f.calls != 3 {
			t.Errorf("%d asks, want 3", r.f.calls)
		}
	})
	t.Run("the owner stops", func(t *testing.T) {
		r := newRig()
		r.Follow("run1")
		r.cancel()
		r.wg.Wait()
		if got, want := r.lines(), []string{checking}; !slices.Equal(got, want) {
			t.Errorf("shown %q, want %q", got, want)
		}
	})
}
