package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/internal/safetext"
)

// nodeJSON is one line of `skiff nodes --json`: what a script needs to pick
// a node, without its credentials.
type nodeJSON struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Protocol     string         `json:"protocol"`
	Server       string         `json:"server"`
	Port         uint16         `json:"port"`
	Supported    bool           `json:"supported"`
	Reason       string         `json:"reason,omitempty"`
	Selected     bool           `json:"selected,omitempty"`
	Subscription string         `json:"subscription,omitempty"`
	Transport    *transportJSON `json:"transport,omitempty"`
	TLS          *tlsJSON       `json:"tls,omitempty"`
	Ports        string         `json:"ports,omitempty"` // hysteria2 port hopping
	Obfs         string         `json:"obfs,omitempty"`  // hysteria2 obfuscation type
	Flow         string         `json:"flow,omitempty"`  // vless
	Multiplex    string         `json:"multiplex,omitempty"`
}

type transportJSON struct {
	Type            string `json:"type"`
	Path            string `json:"path,omitempty"`
	Host            string `json:"host,omitempty"`
	ServiceName     string `json:"serviceName,omitempty"`
	MaxEarlyData    int    `json:"maxEarlyData,omitempty"`
	EarlyDataHeader string `json:"earlyDataHeader,omitempty"`
}

type tlsJSON struct {
	SNI         string   `json:"sni,omitempty"`
	ALPN        []string `json:"alpn,omitempty"`
	Insecure    bool     `json:"insecure,omitempty"`
	Pinned      bool     `json:"pinned,omitempty"`
	Fingerprint string   `json:"fingerprint,omitempty"`
	Reality     bool     `json:"reality,omitempty"`
	ECH         bool     `json:"ech,omitempty"`
}

func describeNode(p *profile.Profile, n *profile.Node) nodeJSON {
	c := &n.Config
	ok, why := protocol.Supported(c)
	j := nodeJSON{
		ID: n.ID, Name: n.Name(), Protocol: c.Protocol, Server: c.Server, Port: c.Port,
		Supported: ok, Reason: why, Selected: p.Selected == n.ID, Subscription: n.Subscription, Multiplex: c.Multiplex,
	}
	if t := c.Transport; t != nil {
		j.Transport = &transportJSON{Type: t.Type, Path: t.Path, Host: t.Host, ServiceName: t.ServiceName, MaxEarlyData: t.MaxEarlyData, EarlyDataHeader: t.EarlyDataHeader}
	}
	if t := c.TLS; t != nil {
		j.TLS = &tlsJSON{SNI: t.SNI, ALPN: t.ALPN, Insecure: t.Insecure, Pinned: t.PinSHA256 != "", Fingerprint: t.Fingerprint, Reality: t.Reality != nil, ECH: t.ECH != nil}
	}
	if h := c.Hysteria2; h != nil {
		j.Ports, j.Obfs = h.Ports, h.Obfs
	}
	if v := c.VLESS; v != nil {
		j.Flow = v.Flow
	}
	return j
}

// runNodes implements `skiff nodes [--json]`.
func runNodes(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("nodes", stderr, "usage: skiff nodes [--json] [--config-dir DIR]")
	backend := backendFlags(fs)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	ctx, stop := callContext(10 * time.Second)
	defer stop()
	b, done, err := backend(ctx, stderr)
	if err != nil {
		return failed(stderr, "nodes", err)
	}
	defer done()
	p, _, err := b.Profile(ctx)
	if err != nil {
		return failed(stderr, "nodes", err)
	}
	list := make([]nodeJSON, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		list = append(list, describeNode(p, n))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			fmt.Fprintf(stderr, "skiff nodes: %v\n", err)
			return 1
		}
		return 0
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, words().T("cli.noNodes", nil))
		return 0
	}
	rows := [][]string{{"", "NAME", "PROTOCOL", "ADDRESS", "TRANSPORT", "TLS", "STATUS", "ID"}}
	for _, j := range list {
		mark := ""
		if j.Selected {
			mark = "*"
		}
		status := "ok"
		if !j.Supported {
			status = "unsupported: " + j.Reason
		}
		rows = append(rows, []string{mark, tabSafe(j.Name), j.Protocol,
			(&node.Node{Server: j.Server, Port: j.Port}).Address(), transportText(j.Transport), tlsText(j), status, j.ID})
	}
	if err := writeTable(stdout, rows); err != nil {
		return 1
	}
	return 0
}

// tabSafe is s as one table cell: tabs and line breaks become spaces,
// control and bidi runes go (safetext.Line); a name saved by hand or by an
// older version may hold them.
func tabSafe(s string) string { return safetext.Line(s) }

func transportText(t *transportJSON) string {
	if t == nil {
		return "-"
	}
	s := t.Type
	if t.Path != "" {
		s += " " + t.Path
	}
	if t.ServiceName != "" {
		s += " " + t.ServiceName
	}
	if t.MaxEarlyData > 0 {
		s += " ed=" + strconv.Itoa(t.MaxEarlyData)
	}
	return tabSafe(s)
}

func tlsText(j nodeJSON) string {
	t := j.TLS
	if t == nil {
		return "-"
	}
	s := "tls"
	if t.Reality {
		s = "reality"
	}
	if t.SNI != "" {
		s += " " + t.SNI
	}
	if t.Insecure {
		s += " (insecure)"
	}
	return tabSafe(s)
}

// lookupNode returns the saved node whose ID or shown name is name, from the
// profile in $SKIFF_CONFIG_DIR or the OS config dir. It is an error when no
// node or several nodes match, or when Skiff cannot dial the node yet.
// `skiff run --node NAME` uses it.
func lookupNode(name string) (*node.Node, error) {
	return lookupNodeIn("", name)
}

// loadProfile opens the store in dir ("": the default one) and loads its
// profile. A damaged profile comes back with what was saved of it and the
// error (see profile.Store.Load); a nil profile means nothing to use.
func loadProfile(dir string) (*profile.Store, *profile.Profile, error) {
	store, err := profile.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	p, err := store.Load()
	return store, p, err
}

func lookupNodeIn(dir, name string) (*node.Node, error) {
	_, p, err := loadProfile(dir)
	if p == nil {
		return nil, err
	}
	n, err := p.FindNode(name)
	if err != nil {
		return nil, fmt.Errorf("--node: %w", err)
	}
	if ok, why := protocol.Supported(&n.Config); !ok {
		return nil, fmt.Errorf("--node %q: %s", name, why)
	}
	cfg := n.Config
	if n.Rename != "" {
		cfg.Name = n.Rename
	}
	return &cfg, nil
}

// planFor is the profile's plan (core/plan) for the saved node or group
// named name: what the window and `skiff connect --node` would run.
func planFor(dir, name string) (*plan.Plan, error) {
	store, p, err := loadProfile(dir)
	if p == nil {
		return nil, err
	}
	pl, err := plan.Build(p, plan.Request{Target: name})
	if err != nil {
		return nil, fmt.Errorf("--node: %w", err)
	}
	pl.Config.RuleSetCache = plan.RuleSetCache(store.Dir())
	return pl, nil
}
