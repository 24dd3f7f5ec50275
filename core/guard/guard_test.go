package guard

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

type counting struct {
	n    atomic.Int64
	last atomic.Value // string: the last record's attributes
}

func (h *counting) Enabled(context.Context, slog.Level) bool { return true }
func (h *counting) Handle(_ context.Context, r slog.Record) error {
	h.n.Add(1)
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool { b.WriteString(a.String() + " "); return true })
	h.last.Store(b.String())
	return nil
}
func (h *counting) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *counting) WithGroup(string) slog.Handler      { return h }

func TestCatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       func() error
		wantErr error  // errors.Is
		panics  bool   // a *PanicError is expected
		value   string // its Value
	}{
		{name: "no panic", f: func() error { return nil }},
		{name: "plain error", f: func() error { return context.Canceled }, wantErr: context.Canceled},
		{name: "panic with a string", f: func() error { panic("boom") }, panics: true, value: "boom"},
		{name: "runtime error", f: func() error { var b []byte; _ = b[3]; return nil }, panics: true, value: "runtime error: index out of range [3] with length 0"},
		{name: "panic with an error", f: func() error { panic(errors.New("bad")) }, panics: true, value: "bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &counting{}
			r := NewReporter(slog.New(h))
			ctx := WithReporter(context.Background(), r)
			err := Do(ctx, "test flow", tc.f)
			var pe *PanicError
			if got := errors.As(err, &pe); got != tc.panics {
				t.Fatalf("err = %v; a panic error: %v, want %v", err, got, tc.panics)
			}
			if tc.panics {
				if pe.What != "test flow" || !strings.Contains(err.Error(), tc.value) {
					t.Errorf("PanicError = %+v (%q), want what %q and value %q", pe, err, "test flow", tc.value)
				}
				if r.Count() != 1 || h.n.Load() != 1 {
					t.Errorf("count %d, logged %d; want 1, 1", r.Count(), h.n.Load())
				}
				if last, _ := h.last.Load().(string); !strings.Contains(last, "guard_test.go") {
					t.Errorf("the log line has no stack of the panic: %s", last)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if r.Count() != 0 || h.n.Load() != 0 {
				t.Errorf("count %d, logged %d without a panic", r.Count(), h.n.Load())
			}
		})
	}
}

func TestRecoverLimitsTheLog(t *testing.T) {
	h := &counting{}
	r := NewReporter(slog.New(h))
	ctx := WithReporter(context.Background(), r)
	for range 100 {
		func() {
			defer Recover(ctx, "flow")
			panic("again")
		}()
		func() {
			defer r.Recover("reader")
			panic("again")
		}()
	}
	if r.Count() != 200 {
		t.Errorf("Count = %d, want 200", r.Count())
	}
	if h.n.Load() != 1 {
		t.Errorf("logged %d times within %v, want once", h.n.Load(), StackEvery)
	}
}

func TestNilReporter(t *testing.T) {
	// No Reporter in the context: the panic is still recovered.
	err := Do(context.Background(), "flow", func() error { panic("x") })
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *PanicError", err)
	}
	var r *Reporter
	if r.Count() != 0 {
		t.Error("a nil Reporter counted")
	}
	func() {
		defer r.Recover("nil")
		panic("y")
	}()
}

func TestFatalRestoresThenPanics(t *testing.T) {
	restored := false
	defer func() {
		v := recover()
		if v != "engine bug" {
			t.Errorf("recovered %v, want the loop's panic to go on", v)
		}
		if !restored {
			t.Error("the panic went on before restore ran")
		}
	}()
	defer Fatal(func() { restored = true })
	panic("engine bug")
}
