// Package guard keeps one flow's panic from ending the process.
//
// Skiff serves every flow and every server connection on goroutines of its
// own. A panic on such a goroutine ends the whole process in Go, and with it
// every other flow; in TUN mode it would also leave the routes and rules of
// strict route behind. So each goroutine that serves one flow or one peer
// defers Catch (or Recover, when it returns nothing) at its top: the panic
// becomes a *PanicError for that flow alone, its caller's deferred closes end
// the flow, the panic is logged with its stack (at most one full stack per
// StackEvery, the others counted), and it is counted for the stats.
//
// The Reporter that logs and counts travels in the context the inbounds
// give their flows, so that the outbounds' own goroutines (a server
// connection's reader, a dial racing in a failover group) report into the
// same one without another parameter on every constructor. With no Reporter
// in the context a panic is still recovered and logged, to slog's default
// logger.
//
// Goroutines that are not one flow's (the engine's own loops) do not use
// this package: a panic there is a bug in the engine, and the process ends
// after the run's teardown has restored routes and DNS (see Fatal).
package guard

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// StackEvery is how often a panic is logged, with its stack; the panics in
// between are counted, and the next line logged says how many they were.
const StackEvery = 10 * time.Second

// PanicError is the error a recovered panic becomes.
type PanicError struct {
	What  string // what was being served, e.g. "tcp flow"
	Value any    // what panic was called with
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic while serving %s: %v", e.What, e.Value)
}

// Reporter logs and counts the panics recovered in one run of the core. Its
// methods may be called on a nil *Reporter, which logs to slog's default
// logger without a limit and counts nothing.
type Reporter struct {
	log   *slog.Logger
	count atomic.Uint64

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// NewReporter returns a Reporter that logs to log (nil: slog's default).
func NewReporter(log *slog.Logger) *Reporter {
	if log == nil {
		log = slog.Default()
	}
	return &Reporter{log: log}
}

// Count returns how many panics were recovered.
func (r *Reporter) Count() uint64 {
	if r == nil {
		return 0
	}
	return r.count.Load()
}

// report counts and logs one recovered panic.
func (r *Reporter) report(what string, v any, stack []byte) {
	if r == nil {
		slog.Error("recovered a panic", "in", what, "panic", fmt.Sprint(v), "stack", string(stack))
		return
	}
	r.count.Add(1)
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < StackEvery {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	suppressed := r.suppressed
	r.last, r.suppressed = now, 0
	r.mu.Unlock()
	r.log.Error("recovered a panic; that flow was closed, the others go on",
		"in", what, "panic", fmt.Sprint(v), "suppressed", suppressed, "stack", string(stack))
}

type reporterKey struct{}

// WithReporter returns ctx carrying r, for the flows started under it.
func WithReporter(ctx context.Context, r *Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// FromContext returns the Reporter that ctx carries, or nil.
func FromContext(ctx context.Context) *Reporter {
	r, _ := ctx.Value(reporterKey{}).(*Reporter)
	return r
}

// Catch recovers a panic of the calling goroutine, reports it to ctx's
// Reporter and sets *err to a *PanicError. It must be deferred directly:
//
//	func serve(ctx context.Context) (err error) {
//		defer guard.Catch(ctx, &err, "tcp flow")
//		…
//	}
func Catch(ctx context.Context, err *error, what string) {
	v := recover()
	if v == nil {
		return
	}
	FromContext(ctx).report(what, v, debug.Stack())
	*err = &PanicError{What: what, Value: v}
}

// Recover is Catch for a goroutine that returns nothing. It must be
// deferred directly.
func Recover(ctx context.Context, what string) {
	v := recover()
	if v == nil {
		return
	}
	FromContext(ctx).report(what, v, debug.Stack())
}

// Recover is the package's Recover for code that holds the Reporter
// rather than a context (a server connection's reader, captured when the
// connection was dialled). It must be deferred directly; r may be nil.
func (r *Reporter) Recover(what string) {
	v := recover()
	if v == nil {
		return
	}
	r.report(what, v, debug.Stack())
}

// Do calls f and turns a panic in it into a *PanicError, reported to ctx's
// Reporter.
func Do(ctx context.Context, what string, f func() error) (err error) {
	defer Catch(ctx, &err, what)
	return f()
}

// Fatal, deferred directly at the top of one of the engine's own loops,
// runs restore when the loop panics and then panics again with the same
// value: the process still ends, as it should on a bug outside any flow,
// but with the routes, rules and DNS that restore puts back.
func Fatal(restore func()) {
	v := recover()
	if v == nil {
		return
	}
	if restore != nil {
		restore()
	}
	panic(v)
}
