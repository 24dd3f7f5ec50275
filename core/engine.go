package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/core/route"
	"github.com/skiffvpn/skiff/core/stats"
)

// Engine is the flow.Handler behind every inbound: it routes a flow, dials
// its upstream, only then accepts the app's side, and relays with counters
// into the stats. The Controller builds one per run; NewEngine is for
// inbounds tested or run on their own.
type Engine struct {
	router route.Router
	stats  *stats.Stats
	bufs   *relay.Buffers // the read buffers of all the engine's streams
	log    *slog.Logger
	warn   rateLimit // dial failures at Warn level: a dead server must show without debug logs

	// onDialFail, when set, hears of the failed dials that are logged (at
	// most one per 5 s): the Controller turns them into events.
	onDialFail func(m *flow.Metadata, outbound string, err error)
}

// NewEngine returns an Engine that routes with r, counts into st and logs
// to log (per-flow lines at debug level).
func NewEngine(r route.Router, st *stats.Stats, log *slog.Logger) *Engine {
	return &Engine{router: r, stats: st, bufs: relay.NewBuffers(relay.DefaultBudget), log: log}
}

// DialTimeout bounds how long a flow waits for its upstream before the app
// is refused.
const DialTimeout = 20 * time.Second

// rateLimit lets one event through per period and counts the others.
type rateLimit struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether an event may be logged now and how many were
// suppressed since the last one that was.
func (r *rateLimit) allow(period time.Duration) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < period {
		r.suppressed++
		return false, 0
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	return true, n
}

// warnDial logs a failed dial at Warn level, at most once per 5 s.
func (e *Engine) warnDial(m *flow.Metadata, outbound string, err error) {
	if errors.Is(err, context.Canceled) {
		return // the app or Stop gave up, not the server
	}
	if ok, suppressed := e.warn.allow(5 * time.Second); ok {
		e.log.Warn("dial failed", "outbound", outbound, "net", m.Network, "dst", m.Destination.String(),
			"err", err.Error(), "suppressed", suppressed)
		if e.onDialFail != nil {
			e.onDialFail(m, outbound, err)
		}
	}
}

var _ flow.Handler = (*Engine)(nil)

// withPick asks a group to report, into *member, the server that carried
// the flow. Flows to a plain outbound skip the closure and context value.
func withPick(ctx context.Context, out outbound.Outbound, member *string) context.Context {
	switch out.(type) {
	case *group.Group, *switchable:
	default:
		return ctx
	}
	return group.WithPick(ctx, func(s string) { *member = cmp.Or(*member, s) })
}

// HandleStream implements flow.Handler.
// A panic while serving the flow ends that flow alone (see package guard).
func (e *Engine) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) (err error) {
	defer guard.Catch(ctx, &err, "tcp flow")
	start := time.Now()
	up, name, member, err := dialOut(e, ctx, &m, start, "dial failed", func(ctx context.Context, out outbound.Outbound) (net.Conn, error) {
		return out.DialContext(ctx, flow.TCP, m.Destination)
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	app, err := accept()
	if err != nil {
		up.Close()
		e.logFlow(ctx, &m, name, "accept failed", start, nil, err)
		return err
	}
	c := e.track(&m, name, member, cancel)
	defer c.Done()
	if _, halfClose := app.(interface{ CloseWrite() error }); halfClose && m.Host == "" && m.Destination.IP.IsValid() && m.Inbound == "tun" {
		app = &sniffConn{Conn: app, c: c}
	}
	err = relay.Stream(ctx, e.bufs, app, up, &c.Up, &c.Down)
	if errors.Is(err, context.Canceled) {
		err = nil // closed from the connection table or by Stop
	}
	e.logFlow(ctx, &m, name, "stream closed", start, c, err)
	return err
}

// HandlePacket implements flow.Handler.
func (e *Engine) HandlePacket(ctx context.Context, m flow.Metadata, conn net.PacketConn) (err error) {
	defer guard.Catch(ctx, &err, "udp flow")
	defer conn.Close() // on every way out, a panic's too; the relay closes it first
	start := time.Now()
	up, name, member, err := dialOut(e, ctx, &m, start, "udp session failed", func(ctx context.Context, out outbound.Outbound) (net.PacketConn, error) {
		return out.ListenPacket(ctx, m.Destination)
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := e.track(&m, name, member, cancel)
	defer c.Done()
	err = relay.Packet(ctx, conn, up, relay.IdleTimeout(m.Destination.Port), &c.Up, &c.Down)
	if errors.Is(err, context.Canceled) || errors.Is(err, relay.ErrIdle) {
		err = nil
	}
	e.logFlow(ctx, &m, name, "udp session closed", start, c, err)
	return err
}

// dialOut routes m and opens its upstream with open, under DialTimeout; a
// failure is logged as failed (and warned of). member is the server of a
// group that carried it.
func dialOut[C any](e *Engine, ctx context.Context, m *flow.Metadata, start time.Time, failed string, open func(context.Context, outbound.Outbound) (C, error)) (up C, name, member string, err error) {
	out, name, err := e.router.Route(m)
	if err != nil {
		return up, "", "", fmt.Errorf("route %s: %w", m.Destination, err)
	}
	dctx, dcancel := context.WithTimeout(withPick(ctx, out, &member), DialTimeout)
	up, err = open(dctx, out)
	dcancel()
	if err != nil {
		e.warnDial(m, name, err)
		e.logFlow(ctx, m, name, failed, start, nil, err)
		return up, name, "", err
	}
	return up, name, member, nil
}

// track counts m's flow in the stats; cancel ends it from the connection
// table.
func (e *Engine) track(m *flow.Metadata, name, member string, cancel context.CancelFunc) *stats.Conn {
	c := e.stats.Track(m, name, cancel)
	if member != "" {
		c.SetMember(member)
	}
	return c
}

// logFlow writes one debug line per flow. Per-flow lines are debug only: at
// the default level nothing is formatted.
func (e *Engine) logFlow(ctx context.Context, m *flow.Metadata, outbound, msg string, start time.Time, c *stats.Conn, err error) {
	if !e.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("inbound", m.Inbound),
		slog.String("net", m.Network),
		slog.String("src", m.Source.String()),
		slog.String("dst", m.Destination.String()),
		slog.String("outbound", outbound),
		slog.Duration("took", time.Since(start).Round(time.Millisecond)),
	}
	if m.Host != "" {
		attrs = append(attrs, slog.String("host", m.Host))
	}
	if m.Process != "" {
		attrs = append(attrs, slog.String("process", m.Process)) // "?" when a rule asked and it was not found
	}
	if c != nil {
		attrs = append(attrs, slog.Int64("up", c.Up.Load()), slog.Int64("down", c.Down.Load()))
	}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	e.log.LogAttrs(context.Background(), slog.LevelDebug, msg, attrs...)
}
