package core

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

// testNode is a Hysteria2 node; its client does not connect until a flow
// needs it, so the Controller's life can be tested without a server.
func testNode() *node.Node {
	return &node.Node{
		Name: "primary", Protocol: node.Hysteria2, Server: "127.0.0.1", Port: 9,
		Hysteria2: &node.Hysteria2Options{Auth: "secret-auth"},
	}
}

func TestControllerStartStopStart(t *testing.T) {
	var logBuf bytes.Buffer
	c := NewController(Options{LogOutput: &logBuf, LogLines: 4})
	events, cancelEvents := c.Subscribe(16)
	defer cancelEvents()
	before := runtime.NumGoroutine()

	for round := 0; round < 2; round++ {
		if err := c.Start(context.Background(), Config{Nodes: []*node.Node{testNode()}, Listen: "127.0.0.1:0"}); err != nil {
			t.Fatalf("round %d: Start: %v", round, err)
		}
		st := c.Status()
		if st.State != Running || st.Outbound != "primary" || st.Err != "" {
			t.Fatalf("round %d: status %+v", round, st)
		}
		// The proxy answers.
		conn, err := net.Dial("tcp", st.Listen)
		if err != nil {
			t.Fatalf("round %d: dial the proxy: %v", round, err)
		}
		conn.Close()
		if err := c.Start(context.Background(), Config{Nodes: []*node.Node{testNode()}, Listen: "127.0.0.1:0"}); err == nil {
			t.Errorf("round %d: second Start while running succeeded", round)
		}
		if snap := c.Stats(); snap.Memory.RSS == 0 || snap.Memory.Heap == 0 || snap.Outbounds == nil {
			t.Errorf("round %d: Stats = %+v", round, snap)
		}
		if err := c.Stop(); err != nil {
			t.Fatalf("round %d: Stop: %v", round, err)
		}
		if st := c.Status(); st.State != Stopped {
			t.Fatalf("round %d: status after Stop %+v", round, st)
		}
		if _, err := net.Dial("tcp", st.Listen); err == nil {
			t.Errorf("round %d: proxy still listening after Stop", round)
		}
	}
	// Every goroutine of the runs has returned.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Stop, %d before Start", n, before)
	}

	var states []string
	for len(events) > 0 {
		states = append(states, (<-events).Status.State.String())
	}
	want := "starting running stopped starting running stopped"
	if got := strings.Join(states, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if strings.Contains(logBuf.String(), "secret-auth") {
		t.Error("a secret reached the log")
	}
	if !strings.Contains(logBuf.String(), "core: running") {
		t.Errorf("log output lacks the running line: %s", logBuf.String())
	}
	if recs := c.Logs(); len(recs) != 4 || recs[3].Message != "core: stopped" {
		t.Errorf("log ring = %+v, want the 4 latest ending with the stop", recs)
	}
}

func TestControllerStartFailure(t *testing.T) {
	c := NewController(Options{LogOutput: &bytes.Buffer{}})
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no nodes", Config{Listen: "127.0.0.1:0"}, "no server"},
		{"open proxy", Config{Nodes: []*node.Node{testNode()}, Listen: "0.0.0.0:0"}, "not a loopback address"},
		{"bad node", Config{Nodes: []*node.Node{{Protocol: node.Hysteria2, Server: "x"}}, Listen: "127.0.0.1:0"}, "port"},
	} {
		err := c.Start(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Start = %v, want an error about %q", tc.name, err, tc.want)
		}
		if st := c.Status(); st.State != Failed || !strings.Contains(st.Err, tc.want) {
			t.Errorf("%s: status %+v", tc.name, st)
		}
	}
	// AllowLAN lets a non-loopback address through.
	if err := c.Start(context.Background(), Config{Nodes: []*node.Node{testNode()}, Listen: "0.0.0.0:0", AllowLAN: true}); err != nil {
		t.Fatalf("Start with AllowLAN: %v", err)
	}
	c.Stop()
}

func TestLogSubscribe(t *testing.T) {
	level := new(slog.LevelVar)
	c := NewController(Options{LogOutput: &bytes.Buffer{}, LogLevel: level})
	logs, cancel := c.SubscribeLogs(4)
	log := c.Logger().With("server", "a").WithGroup("flow")
	log.Debug("hidden")
	level.Set(slog.LevelDebug)
	log.Debug("shown", "dst", "example.com:443", "note", "two words")
	select {
	case r := <-logs:
		if r.Message != "shown" || r.Attrs != `server=a flow.dst=example.com:443 flow.note="two words"` {
			t.Errorf("record %+v", r)
		}
	case <-time.After(time.Second):
		t.Fatal("no record")
	}
	cancel()
	cancel() // twice is fine
	if _, ok := <-logs; ok {
		t.Error("channel not closed by cancel")
	}
	// A subscriber that does not read never blocks the logger.
	_, cancel2 := c.SubscribeLogs(1)
	defer cancel2()
	for i := 0; i < 100; i++ {
		c.Logger().Info("flood")
	}
}

// TestControllerStartFailureLeavesNothing: a start that fails after its
// routing was built (the listener's port is taken) tears down what it had
// built the same way Stop does: no goroutine of the run is left, and the
// next start works.
func TestControllerStartFailureLeavesNothing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c := NewController(Options{LogOutput: &bytes.Buffer{}})
	before := runtime.NumGoroutine()
	for range 3 {
		if err := c.Start(context.Background(), Config{Nodes: []*node.Node{testNode()}, Listen: taken.Addr().String()}); err == nil {
			t.Fatal("Start on a taken port succeeded")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after three failed starts, %d before", n, before)
	}
	if err := c.Start(context.Background(), Config{Nodes: []*node.Node{testNode()}, Listen: "127.0.0.1:0"}); err != nil {
		t.Fatalf("Start after the failures: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}
