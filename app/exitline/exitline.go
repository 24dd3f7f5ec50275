// Package exitline decides the line "Exit 203.0.113.7 · 🇩🇪 DE" that
// Home and both trays show (where traffic leaves from, Backend.Exit), and
// when to ask for it: once per run and server, since the core keeps the
// answer (core.ExitMaxAge) and forgets it on a switch or a new run. It
// also says how a flag reads in a tray menu: Windows' menu font draws a
// flag's two regional indicators as letters, so a menu there shows none
// (MenuLabel). No Fyne here: the tray process (app/tray) uses it too.
package exitline

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
)

// Words returns message key of internal/i18n's bundles filled with data
// (nil: none), in the language shown.
type Words func(key string, data map[string]any) string

// Text is the line for the answer of Backend.Exit: the address and the
// country with its flag, or that the check failed.
func Text(w Words, ex *api.Exit, err error) string {
	if err != nil || ex == nil {
		return w("home.exitUnknown", nil)
	}
	country := strings.TrimSpace(Flag(ex.Country) + " " + ex.Country)
	return w("home.exit", map[string]any{"IP": ex.IP, "Country": country})
}

// Checking is the line while the check runs.
func Checking(w Words) string { return w("home.exitChecking", nil) }

// Flag is the flag emoji of an ISO 3166-1 alpha-2 code (two regional
// indicator letters), or "" for anything else (the core's "XX": unknown).
func Flag(cc string) string {
	if len(cc) != 2 || cc == "XX" {
		return ""
	}
	r := make([]rune, 2)
	for i := range 2 {
		c := cc[i]
		if c < 'A' || c > 'Z' {
			return ""
		}
		r[i] = 0x1F1E6 + rune(c-'A')
	}
	return string(r)
}

// Key names what a tray asks the exit of: the run (its start) and the
// outbound and member it goes through; "" when st is not running.
func Key(st api.Status) string {
	if st.State != core.Running {
		return ""
	}
	return st.Since.String() + "\x00" + st.Outbound + "\x00" + st.Member
}

// checkTimeout bounds one ask: the core tries its trace services in turn.
const checkTimeout = 25 * time.Second

// Line follows the exit for one place that shows it. Follow says what
// runs now; Line asks once per key and hands each text to show: "" (hide),
// Checking, then Text. It starts no goroutine of its own: Background runs
// the ask on one its caller owns and waits for.
type Line struct {
	o Options

	mu     sync.Mutex // guards the fields below; held while show runs
	key    string
	asks   uint64             // asks begun; an answer counts only for the last
	cancel context.CancelFunc // the ask in flight, if any
	ex     *api.Exit          // key's answer, once done
	err    error
	done   bool
}

// Options are what a Line needs.
type Options struct {
	Exit  func(ctx context.Context, refresh bool) (*api.Exit, error) // Backend.Exit
	Words Words
	// Background runs work on a goroutine its caller owns (and waits for
	// when it stops), then done where Show may be called (a UI thread).
	Background func(work func(context.Context), done func())
	Show       func(text string) // "" hides the line
}

// Goroutines is a Background for a caller without a UI thread: each ask
// runs, then its done, on a goroutine counted in wg, with ctx.
func Goroutines(ctx context.Context, wg *sync.WaitGroup) func(work func(context.Context), done func()) {
	return func(work func(context.Context), done func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(ctx)
			done()
		}()
	}
}

// New returns a Line that shows nothing yet.
func New(o Options) *Line { return &Line{o: o} }

// Follow shows the exit of key ("" hides the line): the answer it has, or
// it asks. It is called where Show may be called.
func (l *Line) Follow(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if key == l.key {
		return
	}
	if l.cancel != nil {
		l.cancel() // an ask for another run or server
		l.cancel = nil
	}
	l.key, l.ex, l.err, l.done = key, nil, nil, false
	if key == "" {
		l.o.Show("")
		return
	}
	l.o.Show(Checking(l.o.Words))
	l.asks++
	ask := l.asks
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	var ex *api.Exit
	var err error
	l.o.Background(func(parent context.Context) {
		defer context.AfterFunc(parent, cancel)()
		tctx, cancelT := context.WithTimeout(ctx, checkTimeout)
		defer cancelT()
		ex, err = l.o.Exit(tctx, false)
	}, func() {
		aborted := ctx.Err() != nil // superseded, or the caller stops
		cancel()
		l.mu.Lock()
		defer l.mu.Unlock()
		if aborted || ask != l.asks {
			return
		}
		l.cancel = nil
		l.ex, l.err, l.done = ex, err, true
		l.o.Show(Text(l.o.Words, ex, err))
	})
}

// Relabel shows the line again in the words of Options.Words (the
// language was changed).
func (l *Line) Relabel() {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.key == "":
		l.o.Show("")
	case l.done:
		l.o.Show(Text(l.o.Words, l.ex, l.err))
	default:
		l.o.Show(Checking(l.o.Words))
	}
}
