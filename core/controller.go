// Package core is Skiff's engine and the API that the GUI and the headless
// CLI drive it through: a Controller starts and stops the core, reports its
// state, its traffic and memory, lists and closes connections, and streams
// events and log lines.
//
// A flow goes one way: an inbound (core/inbound/…) hands it to the engine
// (engine.go), which asks the router (core/route) for an outbound
// (core/outbound/…), dials, and relays (core/relay) with counters into the
// stats (core/stats).
package core

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/stats"
)

// State is where the core is in its life.
type State int

// States of the core.
const (
	Stopped  State = iota // not running (initially, and after Stop)
	Starting              // Start is in progress
	Running               // serving flows
	Failed                // Start failed or the core stopped on an error; Status.Err says why
)

// MarshalText writes the state's name, as String.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	for _, v := range []State{Stopped, Starting, Running, Failed} {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("core: unknown state %q", b)
}

// String returns the state's name as the GUI shows it.
func (s State) String() string {
	switch s {
	case Stopped:
		return "stopped"
	case Starting:
		return "starting"
	case Running:
		return "running"
	case Failed:
		return "error"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a snapshot of the core's state.
type Status struct {
	State    State
	Outbound string     // the name of the outbound in use ("" when stopped)
	Member   string     // with several servers: the one carrying new flows now ("" when none is usable)
	Reason   string     // the last failover switch's reason in English ("" when none)
	Why      *group.Why // the same as data, for front ends' own words (nil when none)
	Listen   string     // the address the local proxy listens on ("" when stopped)
	TUN      string     // the TUN device's name in TUN mode ("" otherwise)
	Routing  Routing    // how new flows are routed ("" when stopped)
	Err      string     // the last error in plain words ("" when none)
	Since    time.Time  // when State was entered
	// Cause is the error behind Err, for errors.Is (core.ErrNoServer,
	// ErrTUNPermission, …); nil when none.
	Cause error
}

// ErrRunning is returned by Start when the core is already running.
var ErrRunning = errors.New("core: already running")

// Options configure a Controller for its whole life (across runs).
type Options struct {
	// LogOutput receives log lines as slog text; nil: os.Stderr. Use
	// io.Discard to keep them only in the ring.
	LogOutput io.Writer
	// LogLevel is the minimum level logged; nil: Info. A *slog.LevelVar can
	// be changed while running.
	LogLevel slog.Leveler
	// LogLines is how many recent log records Logs keeps; 0: 1000.
	LogLines int
	// ExitSources are the trace services Exit asks, in order; nil:
	// exitip.DefaultSources. ExitRoots verifies their TLS certificates;
	// nil: the system's roots. (Tests point both at a local server.)
	ExitSources []string
	ExitRoots   *x509.CertPool
}

// EventKind says what an Event reports.
type EventKind int

// Kinds of Event.
const (
	EventState      EventKind = iota // the state changed; Status holds the new one (and Status.Err why, on failure)
	EventSwitch                      // a failover group moved new flows to another member; Switch says which and why
	EventFlowFailed                  // connections could not be carried (at most one event per 5 s); Message says why
)

// Event is a change the GUI may want to show.
type Event struct {
	Time    time.Time
	Kind    EventKind
	Status  Status // the status after the event
	Message string
	Switch  *group.Event // set for EventSwitch
	Err     error        // EventFlowFailed: the dial's error, for errors.Is
}

// Snapshot is the core's traffic and memory at one moment.
type Snapshot struct {
	Up, Down    int64               // bytes relayed since Start
	Rate        stats.Sample        // throughput over the last second
	Series      []stats.Sample      // the last minute, oldest first
	Outbounds   map[string][2]int64 // bytes [up, down] per outbound name
	Memory      stats.Memory        // the whole process (core and, in-process, the GUI)
	Connections int                 // open connections
	Panics      uint64              // panics recovered while serving a flow (each closed that flow only)
}

// Controller runs the core. Its methods are safe for concurrent use and
// none of the read methods (Status, Stats, Connections, Logs) waits for the
// network, so a GUI can poll them from its UI goroutine.
type Controller struct {
	log  *slog.Logger
	ring *logRing

	events hub[Event]

	exitSources []string       // Options.ExitSources
	exitRoots   *x509.CertPool // Options.ExitRoots

	op sync.Mutex // serialises Start and Stop

	mu     sync.Mutex // guards the fields below
	status Status
	run    *run
}

// NewController returns a stopped Controller.
func NewController(o Options) *Controller {
	if o.LogOutput == nil {
		o.LogOutput = os.Stderr
	}
	if o.LogLevel == nil {
		o.LogLevel = slog.LevelInfo
	}
	if o.LogLines <= 0 {
		o.LogLines = 1000
	}
	ring := newLogRing(o.LogLines)
	text := slog.NewTextHandler(o.LogOutput, &slog.HandlerOptions{Level: o.LogLevel})
	c := &Controller{
		ring:   ring,
		log:    slog.New(&teeHandler{ring: ring, next: text, level: o.LogLevel}),
		status: Status{State: Stopped, Since: time.Now()},

		exitSources: o.ExitSources,
		exitRoots:   o.ExitRoots,
	}
	return c
}

// Logger returns the logger whose records go to the log output and to the
// ring that Logs and SubscribeLogs read.
func (c *Controller) Logger() *slog.Logger { return c.log }

// Start starts the core with cfg and returns once the local proxy listens,
// or with the reason it could not start (also reported by Status and as an
// event). ctx bounds the starting only; the core then runs until Stop.
func (c *Controller) Start(ctx context.Context, cfg Config) error {
	c.op.Lock()
	defer c.op.Unlock()
	c.mu.Lock()
	if c.run != nil {
		c.mu.Unlock()
		return ErrRunning
	}
	c.mu.Unlock()
	c.setStatus(Status{State: Starting})

	r, st, err := c.start(ctx, cfg)
	if err != nil {
		c.log.Error("core: start failed", "err", err)
		c.setStatus(Status{State: Failed, Err: err.Error(), Cause: err})
		return err
	}
	c.mu.Lock()
	c.run = r
	c.mu.Unlock()
	c.log.Info("core: running", "listen", st.Listen, "outbound", st.Outbound)
	c.setStatus(st)
	return nil
}

// nodeName is how a node is named in the status and the stats.
func nodeName(n *node.Node) string {
	if n.Name != "" {
		return n.Name
	}
	return n.Protocol + " " + n.Address()
}

// Stop stops the core: the listener closes, every flow ends, every
// goroutine of the run has returned when Stop returns. Stopping a stopped
// core does nothing.
func (c *Controller) Stop() error {
	c.op.Lock()
	defer c.op.Unlock()
	c.mu.Lock()
	r := c.run
	c.run = nil
	c.mu.Unlock()
	if r == nil {
		if c.Status().State == Failed {
			c.setStatus(Status{State: Stopped})
		}
		return nil
	}
	err := r.close()
	c.log.Info("core: stopped")
	c.setStatus(Status{State: Stopped})
	return err
}

// setStatus records st and publishes it.
func (c *Controller) setStatus(st Status) {
	st.Since = time.Now()
	c.mu.Lock()
	c.status = st
	c.mu.Unlock()
	c.events.publish(Event{Time: st.Since, Kind: EventState, Status: st, Message: st.Err})
}

// Status returns the core's current state.
func (c *Controller) Status() Status {
	c.mu.Lock()
	st, r := c.status, c.run
	c.mu.Unlock()
	if r != nil && r.routing.live != nil {
		st.Member = r.routing.current()
		r.routing.mu.Lock()
		st.Outbound = r.routing.proxy
		r.routing.mu.Unlock()
	}
	if r != nil {
		r.routing.mu.Lock()
		st.Routing = r.routing.routing
		r.routing.mu.Unlock()
	}
	return st
}

// Groups returns the state of the run's groups and their members, for the
// GUI: the route's (named TargetProxy) first, when it has several servers,
// then those of the Targets that rules send flows to, named as the
// targets are; nil when stopped or when no target is a group.
func (c *Controller) Groups() []GroupState {
	r := c.current()
	if r == nil {
		return nil
	}
	var out []GroupState
	r.routing.mu.Lock()
	groups := append([]*group.Group(nil), r.routing.groups...)
	r.routing.mu.Unlock()
	for _, g := range groups {
		out = append(out, GroupState{Name: g.Name(), Mode: g.Mode(), Current: g.Current(), Members: g.Members()})
	}
	return out
}

// RuleSets returns the state of the run's rule sets: what each holds, when
// it was downloaded, and why its last download failed, if it did; nil when
// stopped or without rule sets.
func (c *Controller) RuleSets() []RuleSetState {
	r := c.current()
	if r == nil || r.routing.sets == nil {
		return nil
	}
	return r.routing.sets.State()
}

// RefreshRuleSets downloads the run's rule sets named (none: every one
// that has a URL) now, and returns their states once each was tried and
// the rules were rebuilt over what came, or when ctx ends (with its
// error). A failed download keeps the list in use and says why in its
// state. ErrNoRuleSet: stopped, no rule sets, or an unknown name;
// ErrRuleSetNoURL: a set that is the profile's own data.
func (c *Controller) RefreshRuleSets(ctx context.Context, names ...string) ([]RuleSetState, error) {
	r := c.current()
	if r == nil || r.routing.sets == nil {
		return nil, fmt.Errorf("%w: the core runs no rule sets", ErrNoRuleSet)
	}
	return r.routing.sets.refresh(ctx, names)
}

// GroupState is a failover group as the GUI shows it.
type GroupState struct {
	Name    string // the target's: TargetProxy for the route's group, else a Target's Name
	Mode    group.Mode
	Current string              // the member carrying new flows; "" when none is usable
	Members []group.MemberState // in configured order
}

// onSwitch logs a group's switch and publishes it as an event; a switch
// of the route's group (TargetProxy) is also the status's reason, one of
// a rule target's group is not.
func (c *Controller) onSwitch(e group.Event) {
	c.log.Warn("failover", "group", e.Group, "from", e.From, "to", e.To, "reason", e.Reason)
	if r := c.current(); r != nil {
		r.exit.forget() // the exit may have moved with the flows
	}
	if e.Group == TargetProxy {
		c.mu.Lock()
		c.status.Reason, c.status.Why = e.Reason, &e.Why
		c.mu.Unlock()
	}
	st := c.Status()
	c.events.publish(Event{Time: e.Time, Kind: EventSwitch, Status: st, Message: e.Reason, Switch: &e})
}

// current returns the running run, or nil.
func (c *Controller) current() *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run
}

// Stats returns the traffic since Start and the memory now. When the core
// is stopped only Memory is filled in.
func (c *Controller) Stats() Snapshot {
	s := Snapshot{Memory: stats.ReadMemory()}
	r := c.current()
	if r == nil {
		return s
	}
	s.Up, s.Down = r.stats.Totals()
	s.Rate = r.stats.Rate()
	s.Series = r.stats.Series()
	s.Outbounds = r.stats.OutboundTotals()
	s.Connections = r.stats.ConnCount()
	s.Panics = r.panics.Count()
	return s
}

// Connections lists the open connections, oldest first.
func (c *Controller) Connections() []stats.ConnInfo {
	r := c.current()
	if r == nil {
		return nil
	}
	return r.connections()
}

// CloseConnection ends the connection with the given id and reports whether
// it was open.
func (c *Controller) CloseConnection(id uint64) bool {
	r := c.current()
	if r == nil {
		return false
	}
	return r.stats.CloseConnection(id)
}

// Subscribe returns a channel of events from now on, with room for buf of
// them, and a func to end the subscription. The core never waits for a
// subscriber: a full channel misses events (Status has the latest state).
func (c *Controller) Subscribe(buf int) (<-chan Event, func()) {
	return c.events.subscribe(buf)
}

// Logs returns the recent log records, oldest first.
func (c *Controller) Logs() []LogRecord { return c.ring.records() }

// SubscribeLogs returns a channel of log records from now on, with room for
// buf of them, and a func to end the subscription. A full channel misses
// records (Logs has the recent ones).
func (c *Controller) SubscribeLogs(buf int) (<-chan LogRecord, func()) {
	return c.ring.hub.subscribe(buf)
}
