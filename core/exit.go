package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/exitip"
	"github.com/skiffvpn/skiff/core/flow"
)

// Exit is where the user's traffic leaves from, as a trace service saw it.
type Exit struct {
	IP        netip.Addr
	Country   string    // ISO 3166-1 alpha-2 ("DE")
	Via       string    // the server (a group's member), or direct, that carried the check
	CheckedAt time.Time // when the answer came
}

// What a caller of Controller.Exit can make the core spend: one check in
// flight (callers meanwhile wait for it), an answer reused for
// ExitMaxAge, and a refresh sooner than ExitMinInterval after the last
// check given that check's answer. A switch or a new connection forgets
// the answer, so the next call checks again.
const (
	ExitMaxAge      = 10 * time.Minute
	ExitMinInterval = 5 * time.Second
)

// Errors of Controller.Exit.
var (
	ErrExitLookup  = errors.New("core: exit address lookup failed")
	errExitAborted = errors.New("core: exit check abandoned") // its caller left; a waiter checks again
)

// Exit returns where traffic leaves from now: the run's last answer, or a
// new check through the route an app's flow to the trace service takes
// (the router, then the group or outbound it picks). refresh asks for a
// new check (see ExitMinInterval). ErrNotRunning when stopped;
// ErrExitLookup when no trace service answered.
func (c *Controller) Exit(ctx context.Context, refresh bool) (Exit, error) {
	r := c.current()
	if r == nil {
		return Exit{}, ErrNotRunning
	}
	return r.exit.get(ctx, refresh, func(ctx context.Context) (Exit, error) {
		var via viaName
		info, err := exitip.Lookup(ctx, func(ctx context.Context, network, addr string) (net.Conn, error) {
			return r.dialAsFlow(ctx, addr, &via)
		}, c.exitRoots, c.exitSources)
		if err != nil {
			if ctx.Err() != nil {
				return Exit{}, ctx.Err()
			}
			return Exit{}, fmt.Errorf("%w: %w", ErrExitLookup, err)
		}
		return Exit{IP: info.IP, Country: info.Country, Via: via.get(), CheckedAt: time.Now()}, nil
	})
}

// viaName is the name a dial went through; the HTTP transport may dial
// on its own goroutine.
type viaName struct {
	mu   sync.Mutex
	name string
}

func (v *viaName) set(s string) { v.mu.Lock(); v.name = s; v.mu.Unlock() }
func (v *viaName) get() string  { v.mu.Lock(); defer v.mu.Unlock(); return v.name }

// dialAsFlow opens a TCP connection to addr as a flow from an app would
// be: routed by the run's rules, dialled by the outbound or group they
// pick; via hears the server (or outbound) that carried it. It is not
// counted in the stats: it is the core's own.
func (r *run) dialAsFlow(ctx context.Context, addr string, via *viaName) (net.Conn, error) {
	dst, err := flow.ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	// Process: no program to look up, the core opens this connection.
	m := flow.Metadata{Network: flow.TCP, Destination: dst, Inbound: "exit", Process: flow.ProcessUnknown}
	out, name, err := r.routing.router.Route(&m)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", dst, err)
	}
	var member string
	dctx, cancel := context.WithTimeout(withPick(ctx, out, &member), DialTimeout)
	defer cancel()
	conn, err := out.DialContext(dctx, flow.TCP, m.Destination)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if member != "" {
		name = member
	}
	via.set(name)
	return conn, nil
}

// exitCheck is a run's cache of its exit and the one check in flight.
type exitCheck struct {
	mu     sync.Mutex
	last   Exit
	err    error     // the last check's failure, kept for ExitMinInterval
	at     time.Time // when the last check started; zero: none, or forgotten
	gen    uint64    // bumped by forget: a check begun before is not kept
	flight *exitFlight
}

type exitFlight struct {
	done chan struct{}
	res  Exit
	err  error
}

// forget drops the answer: the route changed.
func (e *exitCheck) forget() {
	e.mu.Lock()
	e.gen++
	e.at, e.last, e.err = time.Time{}, Exit{}, nil
	e.mu.Unlock()
}

// get returns the kept answer, waits for the check in flight, or runs
// check on the caller's goroutine (its ctx bounds it).
func (e *exitCheck) get(ctx context.Context, refresh bool, check func(context.Context) (Exit, error)) (Exit, error) {
	for {
		e.mu.Lock()
		if f := e.flight; f != nil {
			e.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return Exit{}, ctx.Err()
			}
			if errors.Is(f.err, errExitAborted) {
				continue
			}
			return f.res, f.err
		}
		if !e.at.IsZero() {
			age := time.Since(e.at)
			if age < ExitMinInterval || (!refresh && e.err == nil && age < ExitMaxAge) {
				res, err := e.last, e.err
				e.mu.Unlock()
				return res, err
			}
		}
		f := &exitFlight{done: make(chan struct{})}
		e.flight, e.at = f, time.Now()
		gen := e.gen
		e.mu.Unlock()

		f.res, f.err = check(ctx)
		e.mu.Lock()
		e.flight = nil
		switch {
		case ctx.Err() != nil:
			f.err = errExitAborted
			e.at = time.Time{}
		case gen == e.gen:
			e.last, e.err = f.res, f.err
		}
		e.mu.Unlock()
		close(f.done)
		if errors.Is(f.err, errExitAborted) {
			return Exit{}, ctx.Err()
		}
		return f.res, f.err
	}
}
