package core

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LogRecord is one log line as the GUI shows it.
type LogRecord struct {
	Time    time.Time
	Level   slog.Level
	Message string
	Attrs   string // "key=value key=value", as slog's text handler writes them
}

// logRing keeps the most recent records and fans new ones out.
type logRing struct {
	mu   sync.Mutex
	buf  []LogRecord
	next int
	full bool
	hub  hub[LogRecord]
}

func newLogRing(n int) *logRing { return &logRing{buf: make([]LogRecord, n)} }

func (r *logRing) add(rec LogRecord) {
	r.mu.Lock()
	r.buf[r.next] = rec
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
	r.hub.publish(rec)
}

// records returns the kept records, oldest first.
func (r *logRing) records() []LogRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]LogRecord(nil), r.buf[:r.next]...)
	}
	out := make([]LogRecord, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// teeHandler is a slog.Handler that keeps each record in a logRing and
// passes it on to another handler (the text handler on stderr).
type teeHandler struct {
	ring   *logRing
	next   slog.Handler
	level  slog.Leveler
	prefix string // pre-formatted attrs from WithAttrs
	group  string // "a.b." from WithGroup
}

func (h *teeHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	h.ring.add(LogRecord{Time: r.Time, Level: r.Level, Message: r.Message, Attrs: strings.TrimSpace(b.String())})
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	h2 := *h
	h2.prefix = b.String()
	h2.next = h.next.WithAttrs(attrs)
	return &h2
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.group = h.group + name + "."
	h2.next = h.next.WithGroup(name)
	return &h2
}

// appendAttr writes " key=value", flattening groups into dotted keys.
func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			appendAttr(b, g, ga)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(group)
	b.WriteString(a.Key)
	b.WriteByte('=')
	v := a.Value.String()
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		b.WriteString(strconv.Quote(v))
	} else {
		b.WriteString(v)
	}
}
