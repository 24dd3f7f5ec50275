package core

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestControllerRules runs the core with no server: rules send one port
// to block and the rest direct.
func TestControllerRules(t *testing.T) {
	var logBuf bytes.Buffer
	c := NewController(Options{LogOutput: &logBuf})
	echo := nettest.TCPEcho(t).String()
	host, port := splitPort(t, echo)
	blocked := nettest.ClosedPort(t).String()
	_, bport := splitPort(t, blocked)
	cfg := Config{
		Listen: "127.0.0.1:0",
		Rules:  []rule.Rule{{Ports: []rule.PortRange{{From: bport, To: bport}}, Target: TargetBlock}},
		Final:  TargetDirect,
	}
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	proxy := c.Status().Listen
	if _, rep, _ := socksRequest(t, proxy, 1, host, port); rep != 0 {
		t.Errorf("direct flow: SOCKS reply %d, want success", rep)
	}
	if _, rep, _ := socksRequest(t, proxy, 1, host, bport); rep == 0 {
		t.Error("blocked flow: SOCKS success, want a failure reply")
	}
	if c.Status().Outbound != TargetDirect {
		t.Errorf("Outbound = %q, want direct", c.Status().Outbound)
	}
}

// TestControllerFailoverGroup checks the wiring of several servers into a
// failover group: two Hysteria2 servers where nothing listens fail over to
// each other, the flow fails with both named, and the switch is an event.
func TestControllerFailoverGroup(t *testing.T) {
	var logBuf bytes.Buffer
	c := NewController(Options{LogOutput: &logBuf})
	events, cancel := c.Subscribe(16)
	defer cancel()
	a, b := testNode(), testNode()
	b.Name = "fallback"
	cfg := Config{
		Nodes:  []*node.Node{a, b},
		Listen: "127.0.0.1:0",
		Policy: group.Policy{ProbeURL: "http://127.0.0.1:9/", DialTimeout: 300 * time.Millisecond, HedgeMax: 50 * time.Millisecond},
	}
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	st := c.Status()
	if st.Outbound != TargetProxy || st.Member != "primary" {
		t.Fatalf("status %+v, want proxy group on primary", st)
	}
	gs := c.Groups()
	if len(gs) != 1 || len(gs[0].Members) != 2 || gs[0].Members[1].Name != "fallback" {
		t.Fatalf("Groups() = %+v", gs)
	}
	host, port := splitPort(t, nettest.ClosedPort(t).String())
	if _, rep, _ := socksRequest(t, st.Listen, 1, host, port); rep == 0 {
		t.Fatal("SOCKS success through two dead servers")
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Kind == EventSwitch && e.Switch != nil && e.Switch.From == "primary" {
				if c.Status().Reason == "" {
					t.Error("Status.Reason empty after a switch")
				}
				return
			}
		case <-deadline:
			t.Fatalf("no switch event; log:\n%s", logBuf.String())
		}
	}
}

// TestTargetGroupSwitchEvent: a rule target's group that moves off a dead
// member publishes the switch under its own name, and the status's reason
// (the route's) stays.
func TestTargetGroupSwitchEvent(t *testing.T) {
	var logBuf bytes.Buffer
	c := NewController(Options{LogOutput: &logBuf})
	events, cancel := c.Subscribe(16)
	defer cancel()
	a, hk1, hk2 := testNode(), testNode(), testNode()
	hk1.Name, hk2.Name = "hk1", "hk2"
	cfg := Config{
		Nodes:   []*node.Node{a},
		Targets: []Target{{Name: "HK", Nodes: []*node.Node{hk1, hk2}}},
		Rules:   []rule.Rule{{DomainSuffix: []string{"hk.example"}, Target: "HK"}},
		Listen:  "127.0.0.1:0",
		Policy:  group.Policy{ProbeURL: "http://127.0.0.1:9/", DialTimeout: 300 * time.Millisecond, HedgeMax: 50 * time.Millisecond},
	}
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, rep, _ := socksRequest(t, c.Status().Listen, 1, "a.hk.example", 80); rep == 0 {
		t.Fatal("SOCKS success through two dead servers")
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Kind != EventSwitch || e.Switch == nil {
				continue
			}
			if e.Switch.Group != "HK" || e.Switch.From != "hk1" {
				t.Fatalf("switch %+v, want HK's off hk1", e.Switch)
			}
			if st := c.Status(); st.Reason != "" || st.Why != nil {
				t.Errorf("status reason %q / %+v: a rule target's switch is not the route's", st.Reason, st.Why)
			}
			return
		case <-deadline:
			t.Fatalf("no switch event; log:\n%s", logBuf.String())
		}
	}
}

// TestFlowFailedEvent: a flow that cannot be carried is an event the GUI
// can show, not only a log line.
func TestFlowFailedEvent(t *testing.T) {
	var logBuf bytes.Buffer
	c := NewController(Options{LogOutput: &logBuf})
	events, cancel := c.Subscribe(16)
	defer cancel()
	if err := c.Start(context.Background(), Config{Listen: "127.0.0.1:0", Final: TargetDirect}); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	host, port := splitPort(t, nettest.ClosedPort(t).String())
	if _, rep, _ := socksRequest(t, c.Status().Listen, 1, host, port); rep == 0 {
		t.Fatal("SOCKS success to a closed port")
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Kind == EventFlowFailed {
				if !strings.Contains(e.Message, "direct to "+host) || !strings.Contains(e.Message, "refused") {
					t.Errorf("message %q", e.Message)
				}
				return
			}
		case <-deadline:
			t.Fatal("no flow-failed event")
		}
	}
}

// TestRuleTargets: rules route to targets of their own (a node, a group)
// beside the route's group; a node in both is one outbound; bad target
// names are refused.
func TestRuleTargets(t *testing.T) {
	c := NewController(Options{LogOutput: &bytes.Buffer{}})
	a, b, hk := testNode(), testNode(), testNode()
	b.Name, hk.Name = "b", "hk"
	rules := []rule.Rule{
		{Ports: []rule.PortRange{{From: 1, To: 1}}, Target: "HK"},
		{Ports: []rule.PortRange{{From: 2, To: 2}}, Target: "b alone"},
	}
	cfg := Config{
		Nodes: []*node.Node{a, b},
		Targets: []Target{
			{Name: "HK", Nodes: []*node.Node{hk, b}, Mode: group.Selector, Selected: "b"},
			{Name: "b alone", Nodes: []*node.Node{b}},
		},
		Rules:  rules,
		Listen: "127.0.0.1:0",
		Policy: group.Policy{ProbeURL: "http://127.0.0.1:9/"},
	}
	before := runtime.NumGoroutine()
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	rt := c.current().routing
	if len(rt.nodes) != 3 {
		t.Errorf("%d outbounds for 3 distinct nodes, want 3 (b shared)", len(rt.nodes))
	}
	if len(rt.groups) != 2 {
		t.Errorf("%d groups, want the route's and HK", len(rt.groups))
	}
	for port, want := range map[uint16]string{1: "HK", 2: "b alone", 3: TargetProxy} {
		m := flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "example.com", Port: port}}
		ob, name, err := rt.router.Route(&m)
		if err != nil || name != want || ob != rt.targets[want] {
			t.Errorf("port %d: %q (%v), want %q", port, name, err, want)
		}
	}
	// The window shows the live state of both groups, by target name.
	if gs := c.Groups(); len(gs) != 2 || gs[0].Name != TargetProxy || gs[1].Name != "HK" || gs[1].Current != "b" || len(gs[1].Members) != 2 || gs[1].Members[0].Name != "hk" {
		t.Errorf("Groups() = %+v, want the route's group, then HK on b", gs)
	}
	hkGroup, ok := rt.targets["HK"].(*group.Group)
	if !ok || hkGroup.Current() != "b" || hkGroup.Mode() != group.Selector {
		t.Errorf("HK target = %T, want a selector on b", rt.targets["HK"])
	}
	if len(rt.nodes) > 1 && rt.targets["b alone"] != rt.nodes[1] {
		t.Error("the target b alone is not the outbound of b in the route's group")
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Stop, %d before", n, before)
	}

	for _, bad := range []string{"", TargetProxy, TargetDirect, "HK"} {
		cfg := cfg
		cfg.Targets = append(slices.Clone(cfg.Targets), Target{Name: bad, Nodes: []*node.Node{a}})
		if err := c.Start(context.Background(), cfg); err == nil {
			c.Stop()
			t.Errorf("target named %q accepted", bad)
		}
	}
	cfg.Targets = []Target{{Name: "empty"}}
	if err := c.Start(context.Background(), cfg); err == nil {
		c.Stop()
		t.Error("a target without servers accepted")
	}
}
