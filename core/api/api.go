// Package api is what a front end (the window, the CLI) asks of Skiff's
// core, as one Go interface, Backend, with two implementations: Local runs
// the core in the same process; Client talks to `skiff service` over its
// local socket (HTTP/JSON, versioned paths, NDJSON streams; see server.go
// for the wire). A front end programs against Backend and does not know
// which it has.
//
// Everything a client sends is data — share links, subscription URLs and
// bodies, settings, rules — which the backend validates. No request names
// a path, a command or an executable. Errors cross typed (Error, Code).
package api

import (
	"context"
	"sort"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/stats"
)

// Version is the API version this package speaks: the first segment of
// every path (/v1/status).
const Version = "v1"

// Backend is the core as a front end sees it. Its methods are safe for
// concurrent use; each may wait for the service, so a UI calls them off its
// UI thread (or with a short context).
type Backend interface {
	// Connect starts the core with the profile's route (plan.Build) and
	// returns once it runs or with why it could not start.
	Connect(ctx context.Context, r plan.Request) (*Route, error)
	// Disconnect stops the core; routes and DNS are restored when it
	// returns. Disconnecting a stopped core does nothing.
	Disconnect(ctx context.Context) error
	// Status is the core's state now.
	Status(ctx context.Context) (Status, error)
	// Stats is the traffic and memory now.
	Stats(ctx context.Context) (core.Snapshot, error)
	// Groups is the run's groups: the route's (core.TargetProxy) when it
	// has several servers, then the groups that rules target
	// (core.Controller.Groups); nil when stopped or when none is a group.
	Groups(ctx context.Context) ([]core.GroupState, error)
	// Connections lists the open connections, oldest first.
	Connections(ctx context.Context) ([]stats.ConnInfo, error)
	// CloseConnection ends connection id; ErrNotFound when it is not open.
	CloseConnection(ctx context.Context, id uint64) error
	// Logs is the recent log records, oldest first.
	Logs(ctx context.Context) ([]core.LogRecord, error)
	// Exit is the public address and country traffic leaves from, checked
	// through the route an app's flow takes and kept for a while (see
	// core.Controller.Exit); refresh asks for a new check, which the core
	// grants at most every core.ExitMinInterval. ErrNotConnected when
	// stopped; ErrExitLookup when no trace service answered.
	Exit(ctx context.Context, refresh bool) (*Exit, error)
	// Watch streams notices until ctx ends (the channel is then closed, as
	// it is when the backend goes away). The first notice is the current
	// status; see WatchOptions for the rest.
	Watch(ctx context.Context, o WatchOptions) (<-chan Notice, error)

	// Profile returns the saved profile and its revision.
	Profile(ctx context.Context) (*profile.Profile, string, error)
	// SetProfile replaces the saved profile, if its revision is still rev
	// (ErrConflict otherwise; "" skips the check). The profile is checked
	// (references, node configurations, subscription URLs) before it is
	// saved.
	SetProfile(ctx context.Context, p *profile.Profile, rev string) error
	// Import adds what r carries: a subscription URL (saved and fetched),
	// or a body of links / Clash / sing-box / SIP008 whose nodes are added.
	Import(ctx context.Context, r ImportRequest) (*ImportResult, error)
	// Refresh fetches subscription id again.
	Refresh(ctx context.Context, id string) (*ImportResult, error)
	// Select saves a pick (the profile's selection, or a select group's
	// member) and, when connected, applies it at once: new flows go to
	// it, open ones stay (or close: Settings.CloseOnSwitch). See select.go.
	Select(ctx context.Context, r SelectRequest) (*SelectResult, error)
	// SetMode changes the running connection's mode (see mode.go):
	// between the local proxy and the system proxy at once, to or from
	// TUN by connecting again; refused with the reason when the profile
	// cannot run it. Stopped, it does nothing.
	SetMode(ctx context.Context, r ModeRequest) (*ModeResult, error)
	// SetRouting saves how flows are routed (rule, global, direct; see
	// routing.go) and, when connected, applies it at once to new flows.
	SetRouting(ctx context.Context, r RoutingRequest) (*RoutingResult, error)
	// Probe measures the latency of the given nodes through each node's own
	// outbound, outside the tunnel.
	Probe(ctx context.Context, ids []string) ([]ProbeResult, error)
	// RefreshRuleSets downloads the running rule sets named (none: all
	// that have a URL) now and returns their states once each was tried
	// and the rules were rebuilt; a failed download keeps the list in use
	// and says why in its state (after at most 3 minutes it returns the
	// states then; the downloads go on). ErrNotFound: not connected, no
	// rule sets, or no set of a name; ErrBadRequest: a set that is an
	// imported file's data.
	RefreshRuleSets(ctx context.Context, names []string) ([]core.RuleSetState, error)
}

// Status is the core's state as it crosses the API.
type Status struct {
	State    core.State `json:"state"`
	Outbound string     `json:"outbound,omitempty"`
	Member   string     `json:"member,omitempty"`
	Reason   string     `json:"reason,omitempty"` // the last switch's reason in English
	Why      *group.Why `json:"why,omitempty"`    // the same as data, for the window's own words
	Listen   string     `json:"listen,omitempty"`
	TUN      string     `json:"tun,omitempty"`
	Routing  string     `json:"routing,omitempty"` // core.Routing while running; see RoutingOf
	Since    time.Time  `json:"since"`
	// RuleSets are the running rule sets' states: what each holds, when it
	// was downloaded and why its last download failed; nil when stopped.
	RuleSets []core.RuleSetState `json:"ruleSets,omitempty"`
	// Route is what the last Connect used; nil when stopped.
	Route *Route `json:"route,omitempty"`
	// Error is why the core failed (State core.Failed); nil otherwise.
	Error *Error `json:"error,omitempty"`
}

// Route is what a Connect runs: the route's name and, for a group, its
// profile ID; the node IDs in failover order; the mode.
type Route struct {
	Name    string   `json:"name"`
	GroupID string   `json:"groupID,omitempty"`
	IDs     []string `json:"ids,omitempty"`
	Mode    string   `json:"mode"`
	Skipped []string `json:"skipped,omitempty"`
	// Targets maps the targets the rules name, as saved, to the core's
	// targets they became (plan.Plan.Targets): a GroupState's Name, a
	// lone server's name, core.TargetProxy, direct or block.
	Targets map[string]string `json:"targets,omitempty"`
}

// WatchOptions say what a Watch streams besides state changes, failover
// switches, failed flows and profile changes.
type WatchOptions struct {
	Stats bool // a NoticeStats every second
	Logs  bool // every log record
}

// NoticeKind says what a Notice carries.
type NoticeKind string

// Kinds of Notice.
const (
	NoticeStatus     NoticeKind = "status"     // Status: the state now (first, and after every change)
	NoticeSwitch     NoticeKind = "switch"     // Switch: a failover group moved new flows
	NoticeFlowFailed NoticeKind = "flowFailed" // Message, Error: connections could not be carried (at most one per 5 s)
	NoticeStats      NoticeKind = "stats"      // Stats and Status (the member in use may change without an event): once a second, with WatchOptions.Stats
	NoticeLog        NoticeKind = "log"        // Log: a log record, with WatchOptions.Logs
	NoticeProfile    NoticeKind = "profile"    // the profile changed: read it again
	NoticeDropped    NoticeKind = "dropped"    // the watcher fell behind and missed notices
)

// Notice is one item of a Watch stream.
type Notice struct {
	Kind    NoticeKind       `json:"kind"`
	Time    time.Time        `json:"time"`
	Status  *Status          `json:"status,omitempty"`
	Switch  *group.Event     `json:"switch,omitempty"`
	Message string           `json:"message,omitempty"`
	Error   *Error           `json:"error,omitempty"`
	Stats   *core.Snapshot   `json:"stats,omitempty"`
	Log     *core.LogRecord  `json:"log,omitempty"`
	Profile *ProfileRevision `json:"profile,omitempty"`
}

// ProfileRevision is the revision of the profile after a change.
type ProfileRevision struct {
	Rev string `json:"rev"`
}

// ImportRequest is one import: exactly one of URL and Body.
type ImportRequest struct {
	URL  string `json:"url,omitempty"`  // an http(s) subscription URL (or ssconf://, clash://install-config, …)
	Name string `json:"name,omitempty"` // the user's name for a new subscription
	Body string `json:"body,omitempty"` // links, base64, Clash YAML, sing-box JSON or SIP008 JSON
	// Source is the name of the file Body was read from: the import is
	// listed as a subscription of that name (one without a URL, so never
	// refreshed), and importing the same name again replaces its nodes.
	// Empty: the nodes are added by hand.
	Source string `json:"source,omitempty"`
}

// ImportResult is what an import found.
type ImportResult struct {
	Subscription string   `json:"subscription,omitempty"` // the subscription's ID, for a URL
	Existing     bool     `json:"existing,omitempty"`     // the URL was already saved (it was refreshed)
	Format       string   `json:"format,omitempty"`
	Nodes        int      `json:"nodes"`                 // nodes in the body
	Added        int      `json:"added"`                 // of them, new to the profile
	Unsupported  []string `json:"unsupported,omitempty"` // of them, those this Skiff cannot dial: "name: why"
	Warnings     []string `json:"warnings,omitempty"`
	// Error is why a subscription's fetch failed (the URL is saved and
	// retried); nil when it worked.
	Error *Error `json:"error,omitempty"`
}

// ProbeResult is one node's latency test.
type ProbeResult struct {
	ID      string        `json:"id"`
	Latency time.Duration `json:"latency,omitempty"` // round trip of the probe request; 0 when it failed
	Error   *Error        `json:"error,omitempty"`
	Timeout bool          `json:"timeout,omitempty"`
}

// Update reads the profile, applies fn and saves it, again from the start
// when another client changed it in between (up to a few times).
func Update(ctx context.Context, b Backend, fn func(*profile.Profile) error) error {
	var err error
	for range 5 {
		var (
			p   *profile.Profile
			rev string
		)
		p, rev, err = b.Profile(ctx)
		if err != nil {
			return err
		}
		if err = fn(p); err != nil {
			return err
		}
		if err = b.SetProfile(ctx, p, rev); err == nil || !IsCode(err, CodeConflict) {
			return err
		}
	}
	return err
}

// IsCode reports whether err carries code c.
func IsCode(err error, c Code) bool { return err != nil && CodeOf(err) == c }

// SortByLatency orders probe results as a node list shows them after "test
// all": the nodes that answered, fastest first, then those that timed out,
// then those that failed; ties keep their order.
func SortByLatency(rs []ProbeResult) {
	rank := func(r ProbeResult) int {
		switch {
		case r.Error == nil && r.Latency > 0:
			return 0
		case r.Timeout:
			return 1
		}
		return 2
	}
	sort.SliceStable(rs, func(i, j int) bool {
		ri, rj := rank(rs[i]), rank(rs[j])
		if ri != rj {
			return ri < rj
		}
		return ri == 0 && rs[i].Latency < rs[j].Latency
	})
}
