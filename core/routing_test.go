package core

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

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
