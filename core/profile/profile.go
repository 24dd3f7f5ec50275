// Package profile holds the user's saved state — subscriptions, nodes,
// groups, routes and settings — as one versioned JSON document, and the Store
// that reads and writes it safely: atomic replacement, mode 0600, the
// previous good copy kept, older schemas migrated, a corrupt file set aside
// rather than overwritten.
//
// It is plain data plus file handling. Fetching and parsing subscriptions is
// core/subscription's job; it fills this document through Store.Update.
package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

// SchemaVersion is the version of the document this code writes. A file with
// an older version is migrated on load; a newer one is refused.
const SchemaVersion = 1

// Profile is the whole saved state.
type Profile struct {
	Version       int             `json:"version"`
	Subscriptions []*Subscription `json:"subscriptions,omitempty"`
	Nodes         []*Node         `json:"nodes,omitempty"`  // in display order: subscription order, then the provider's order
	Groups        []*Group        `json:"groups,omitempty"` // in display order
	Selected      string          `json:"selected,omitempty"`
	// Routing is how flows are routed: "rule" (Routes, the default),
	// "global" (all through the selection) or "direct" (core.Routing).
	Routing  string   `json:"routing,omitempty"`
	Routes   Routes   `json:"routes"`
	Settings Settings `json:"settings"`
}

// Subscription is one provider URL and what the last refreshes found.
type Subscription struct {
	ID  string `json:"id"`
	URL string `json:"url"` // carries the user's token: never log it, use subscription.Redact

	Title          string    `json:"title,omitempty"`          // profile-title / Content-Disposition, else the host
	Name           string    `json:"name,omitempty"`           // the user's own name for it; overrides Title
	WebPageURL     string    `json:"webPageURL,omitempty"`     // profile-web-page-url
	UserInfo       *UserInfo `json:"userInfo,omitempty"`       // traffic and expiry, when the provider sends them
	UpdateInterval Duration  `json:"updateInterval,omitempty"` // provider's profile-update-interval
	UserInterval   Duration  `json:"userInterval,omitempty"`   // the user's choice; overrides UpdateInterval
	Format         string    `json:"format,omitempty"`         // detected format of the last good body

	LastAttempt time.Time `json:"lastAttempt,omitzero"` // last refresh, good or bad
	LastSuccess time.Time `json:"lastSuccess,omitzero"` // last refresh that produced nodes
	LastError   string    `json:"lastError,omitempty"`  // empty after a good refresh
	Failures    int       `json:"failures,omitempty"`   // failed refreshes in a row, for back-off
	Warnings    []Warning `json:"warnings,omitempty"`   // lines of the last good body that were skipped

	// Routes are the subscription's own rules (a Clash config's rules: and
	// rule-providers:, a sing-box config's route), as the last good body
	// had them; Routes.SubscriptionRules says whether they are used.
	Routes *SubRoutes `json:"routes,omitempty"`
}

// SubRoutes are the rules a subscription brings, in the profile's terms.
// Targets are "direct", "block", a node's ID or a group's name (resolved
// when a run is planned); rule sets are named as the subscription names
// them.
type SubRoutes struct {
	Rules    []Rule    `json:"rules,omitempty"`
	RuleSets []RuleSet `json:"ruleSets,omitempty"`
	Final    string    `json:"final,omitempty"`  // the MATCH / route.final target; "": none
	Greyed   []Greyed  `json:"greyed,omitempty"` // rules Skiff cannot express, in order, never silently dropped
	Total    int       `json:"total"`            // rules in the body, used and greyed
}

// Greyed is a subscription's rule that Skiff cannot express, and why.
type Greyed struct {
	Rule   string `json:"rule"` // as written (sing-box rules as compact JSON)
	Reason string `json:"reason"`
}

// DisplayName is the user's name for the subscription, else its title.
func (s *Subscription) DisplayName() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Title
}

// UserInfo is a provider's subscription-userinfo: bytes used and allowed,
// and when the subscription expires. Zero fields were not sent.
type UserInfo struct {
	Upload   int64     `json:"upload,omitempty"`
	Download int64     `json:"download,omitempty"`
	Total    int64     `json:"total,omitempty"`
	Expire   time.Time `json:"expire,omitzero"`
}

// Remaining is Total minus what was used, or -1 when Total is unknown.
func (u *UserInfo) Remaining() int64 {
	if u == nil || u.Total <= 0 {
		return -1
	}
	r := u.Total - u.Upload - u.Download
	if r < 0 {
		return 0
	}
	return r
}

// Warning is one part of an input that could not be used.
type Warning struct {
	Line   int    `json:"line,omitempty"` // 1-based; 0 when the input has no lines to speak of
	Reason string `json:"reason"`
}

func (w Warning) String() string {
	if w.Line > 0 {
		return "line " + strconv.Itoa(w.Line) + ": " + w.Reason
	}
	return w.Reason
}

// Node is one saved server.
type Node struct {
	ID           string     `json:"id"`                     // stable: see NodeID
	Subscription string     `json:"subscription,omitempty"` // ID of the subscription it came from; empty: imported by hand
	Rename       string     `json:"rename,omitempty"`       // the user's name for it; overrides Config.Name
	Config       node.Node  `json:"config"`
	Unsupported  string     `json:"unsupported,omitempty"` // why Skiff cannot dial it yet, in English; empty: it can
	Lack         *node.Lack `json:"lack,omitempty"`        // what it needs that Skiff lacks, as data; nil: its settings are wrong, or it can be dialled
}

// Name is the name to show: the user's rename, else the provider's name.
func (n *Node) Name() string {
	if n.Rename != "" {
		return n.Rename
	}
	return n.Config.Name
}

// NodeID derives a node's stable ID from where it came from (a subscription
// ID, or "" for nodes imported by hand) and the identity of the server: the
// protocol, address, credentials and transport, not the display name, so a
// provider renaming a node keeps the user's choices attached to it. The
// credentials go through SHA-256 and never appear in the ID.
func NodeID(source string, n *node.Node) string {
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	field(source)
	field(n.Protocol)
	field(strings.ToLower(n.Server))
	field(strconv.Itoa(int(n.Port)))
	switch {
	case n.Hysteria2 != nil:
		field(n.Hysteria2.Auth)
		field(n.Hysteria2.Ports)
	case n.VLESS != nil:
		field(n.VLESS.UUID)
	case n.VMess != nil:
		field(n.VMess.UUID)
	case n.Shadowsocks != nil:
		field(n.Shadowsocks.Method)
		field(n.Shadowsocks.Password)
	case n.Trojan != nil:
		field(n.Trojan.Password)
	case n.TUIC != nil:
		field(n.TUIC.UUID)
	case n.AnyTLS != nil:
		field(n.AnyTLS.Password)
	case n.WireGuard != nil:
		field(n.WireGuard.PrivateKey)
	}
	if t := n.Transport; t != nil {
		field(t.Type)
		field(t.Path)
		field(t.Host)
		field(t.ServiceName)
	}
	if n.TLS != nil {
		field(n.TLS.SNI)
	}
	return "n" + hex.EncodeToString(h.Sum(nil)[:8])
}

// Group types.
const (
	GroupFailover = "failover" // first healthy member in order
	GroupURLTest  = "urltest"  // lowest latency member
	GroupSelector = "selector" // the member the user picked
)

// Group origins: who made a group.
const (
	OriginUser     = ""         // the user
	OriginAuto     = "auto"     // Skiff, from a subscription's nodes (per server, fastest)
	OriginProvider = "provider" // the subscription itself (Clash proxy-groups)
)

// Group is an ordered set of nodes (or other groups) used as one outbound.
type Group struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"` // one of the Group* constants
	// Subscription is the subscription whose import made the group (""
	// with OriginAuto: the nodes imported by hand), Origin who made it. A
	// refresh replaces the groups it made; the user's own stay.
	Subscription string   `json:"subscription,omitempty"`
	Origin       string   `json:"origin,omitempty"`
	Members      []string `json:"members"`            // node or group IDs, in priority order
	Selected     string   `json:"selected,omitempty"` // selector: the chosen member
	ProbeURL     string   `json:"probeURL,omitempty"` // empty: Settings.ProbeURL
	Interval     Duration `json:"interval,omitempty"` // probe interval; zero: the engine's default
	// Made is the group as its import last made it, before the user's
	// edits: a refresh tells the user's edits (kept) from the import's
	// (replaced) by comparing the group with it. nil for the user's own
	// groups, and for groups made before Skiff kept it (their name only is
	// then known to be the user's).
	Made *GroupShape `json:"made,omitempty"`
}

// GroupShape is what of a group a user may edit.
type GroupShape struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Members  []string `json:"members"`
	ProbeURL string   `json:"probeURL,omitempty"`
	Interval Duration `json:"interval,omitempty"`
}

// Shape returns g's editable part, its members copied.
func (g *Group) Shape() GroupShape {
	return GroupShape{Name: g.Name, Type: g.Type, Members: append([]string(nil), g.Members...), ProbeURL: g.ProbeURL, Interval: g.Interval}
}

// GroupID derives the stable ID of a group made by an import from where
// it came from (a subscription ID, "" for the nodes imported by hand), who
// made it and its name, so that a refresh keeps the user's choice of it
// and the rules that name it.
func GroupID(source, origin, name string) string {
	h := sha256.New()
	for _, s := range []string{source, origin, name} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "g" + hex.EncodeToString(h.Sum(nil)[:8])
}

// FindGroup returns the group whose ID or name is name; a subscription's
// rules name its groups by name. A name shared by several groups is an
// error that says so.
func (p *Profile) FindGroup(name string) (*Group, error) {
	if g := p.Group(name); g != nil {
		return g, nil
	}
	var found []*Group
	for _, g := range p.Groups {
		if g.Name == name {
			found = append(found, g)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no group named %q", name)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d groups are named %q: use the group's ID", len(found), name)
}

// Routes is the routing table as data; core/plan turns it into the core's
// rules.
type Routes struct {
	Rules []Rule `json:"rules,omitempty"`
	Final string `json:"final,omitempty"` // target for flows no rule matched; empty: the selected node or group
	// RuleSets are the rule sets that rules of type "rule_set" name.
	RuleSets []RuleSet `json:"ruleSets,omitempty"`
	// Preset is the preset (core/preset) the rules were last made from;
	// the rules themselves are what counts, edited or not.
	Preset string `json:"preset,omitempty"`
	// SubscriptionRules says how the rules that subscriptions bring
	// (Subscription.Rules) combine with the user's: one of the SubRules*
	// constants; "": SubRulesAfter.
	SubscriptionRules string `json:"subscriptionRules,omitempty"`
}

// How a subscription's own rules combine with the user's.
const (
	SubRulesAfter = "after" // the user's rules first, then the subscriptions', then the user's final
	SubRulesFirst = "first" // the subscriptions' rules (and their final) win; the user's follow
	SubRulesOff   = "off"   // subscriptions' rules are kept but not used
)

// Rule sends flows that match it to Target.
type Rule struct {
	Type   string   `json:"type"`   // "domain", "domain_suffix", "domain_keyword", "ip_cidr", "port", "network", "private", "rule_set", "process"
	Values []string `json:"values"` // what to match; any one matching is enough
	Target string   `json:"target"` // node or group ID, "direct" or "block"
}

// RuleSet is a rule set that rules name: downloaded from URL every
// Interval, or the Data of a file the user imported (the service never
// reads a path a client names).
type RuleSet struct {
	Name     string   `json:"name"`
	URL      string   `json:"url,omitempty"`
	Data     []byte   `json:"data,omitempty"`
	Format   string   `json:"format"`             // as core/ruleset.Parse reads it: "sing-box" (JSON or .srs), "clash-domain", "geoip:cn", …
	Interval Duration `json:"interval,omitempty"` // zero: a day
}

// Settings are the user's preferences.
type Settings struct {
	RefreshInterval Duration `json:"refreshInterval,omitempty"` // for subscriptions that state none; zero: 24h
	ProbeURL        string   `json:"probeURL,omitempty"`        // health-check URL; empty: the engine's default
	TUN             TUN      `json:"tun"`
	Proxy           Proxy    `json:"proxy,omitzero"`
	LogLevel        string   `json:"logLevel,omitempty"`
	// ConnectAtStart: when the service starts (at boot, or restarted after
	// a crash) it connects again as it was connected when it stopped,
	// unless the user had disconnected (core/api Local.Resume).
	ConnectAtStart bool `json:"connectAtStart,omitempty"`
	// CloseOnSwitch: a live switch (a pick while connected) closes the
	// open flows on the old pick, so that their applications reconnect
	// through the new one; off, they stay until they end.
	CloseOnSwitch bool `json:"closeOnSwitch,omitempty"`
}

// TUN is the TUN mode's settings; core/plan applies them over the core's
// defaults.
type TUN struct {
	Name        string `json:"name,omitempty"`        // device name; empty: the core's default
	MTU         int    `json:"mtu,omitempty"`         // zero: the core's default
	StrictRoute *bool  `json:"strictRoute,omitempty"` // nil: on
	// KillSwitch blocks all traffic outside Skiff, also while it is not
	// running; KillSwitchAllowLAN lets the LAN through it.
	KillSwitch         bool `json:"killSwitch,omitempty"`
	KillSwitchAllowLAN bool `json:"killSwitchAllowLAN,omitempty"`
	// FakeIPRange is the fake-IP pool's ranges, as core.ParseFakeIPRange
	// reads it; empty: the default.
	FakeIPRange string `json:"fakeIPRange,omitempty"`
}

// Proxy is the local proxy's settings.
type Proxy struct {
	// Username and Password, when Username is set, are asked of every
	// client of the local proxy (SOCKS5 username/password, HTTP Basic);
	// empty: the proxy asks nothing. The profile file is 0600, as for
	// the servers' own passwords. System-proxy mode refuses them: the
	// desktops' proxy settings cannot pass them on (docs/service-access.md).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"` // a secret: never logged
}

// AuthOn reports whether the proxy asks for credentials.
func (p Proxy) AuthOn() bool { return p.Username != "" }

// Strict reports whether strict route is on (it is unless turned off).
func (t TUN) Strict() bool { return t.StrictRoute == nil || *t.StrictRoute }

// Duration is a time.Duration written as text ("1h30m") in JSON.
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string, or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return errors.New("duration: want a string like \"12h\" or a number of seconds")
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// New returns an empty profile of the current schema.
func New() *Profile {
	return &Profile{Version: SchemaVersion}
}

// Subscription returns the subscription with the given ID, or nil.
func (p *Profile) Subscription(id string) *Subscription {
	for _, s := range p.Subscriptions {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Node returns the node with the given ID, or nil.
func (p *Profile) Node(id string) *Node {
	for _, n := range p.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Group returns the group with the given ID, or nil.
func (p *Profile) Group(id string) *Group {
	for _, g := range p.Groups {
		if g.ID == id {
			return g
		}
	}
	return nil
}

// FindNode returns the node whose ID or shown name is name. A name shared by
// several nodes is an error that says so.
func (p *Profile) FindNode(name string) (*Node, error) {
	if n := p.Node(name); n != nil {
		return n, nil
	}
	var found *Node
	count := 0
	for _, n := range p.Nodes {
		if n.Name() == name {
			if found == nil {
				found = n
			}
			count++
		}
	}
	switch count {
	case 0:
		return nil, fmt.Errorf("no node named %q", name)
	case 1:
		return found, nil
	default:
		return nil, fmt.Errorf("%d nodes are named %q: use the node's ID (skiff nodes shows it)", count, name)
	}
}

// Validate checks the references between parts of the profile.
func (p *Profile) Validate() error {
	if p.Version != SchemaVersion {
		return fmt.Errorf("profile: version %d, want %d", p.Version, SchemaVersion)
	}
	ids := make(map[string]bool, len(p.Nodes)+len(p.Groups))
	for i, s := range p.Subscriptions {
		if s == nil || s.ID == "" {
			return fmt.Errorf("profile: subscription %d: empty id", i)
		}
	}
	for i, n := range p.Nodes {
		if n == nil || n.ID == "" {
			return fmt.Errorf("profile: node %d: empty id", i)
		}
		if ids[n.ID] {
			return fmt.Errorf("profile: node %d: duplicate id %s", i, n.ID)
		}
		ids[n.ID] = true
	}
	for i, g := range p.Groups {
		if g == nil || g.ID == "" {
			return fmt.Errorf("profile: group %d: empty id", i)
		}
		if ids[g.ID] {
			return fmt.Errorf("profile: group %d: duplicate id %s", i, g.ID)
		}
		ids[g.ID] = true
		switch g.Type {
		case GroupFailover, GroupURLTest, GroupSelector:
		default:
			return fmt.Errorf("profile: group %q: unknown type %q", g.Name, g.Type)
		}
		switch g.Origin {
		case OriginUser, OriginAuto, OriginProvider:
		default:
			return fmt.Errorf("profile: group %q: unknown origin %q", g.Name, g.Origin)
		}
	}
	return nil
}

// Prune removes references to nodes and groups that no longer exist: group
// members, group selections and the profile's selection. Subscription
// refreshes call it after replacing a subscription's nodes.
func (p *Profile) Prune() {
	exists := make(map[string]bool, len(p.Nodes)+len(p.Groups))
	for _, n := range p.Nodes {
		exists[n.ID] = true
	}
	for _, g := range p.Groups {
		exists[g.ID] = true
	}
	for _, g := range p.Groups {
		kept := g.Members[:0]
		for _, m := range g.Members {
			if exists[m] {
				kept = append(kept, m)
			}
		}
		g.Members = kept
		if g.Selected != "" && !exists[g.Selected] {
			g.Selected = ""
		}
	}
	if p.Selected != "" && !exists[p.Selected] {
		p.Selected = ""
	}
}
