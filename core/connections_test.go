package core

import (
	"context"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestConnectionsNamePrograms: a connection through the local proxy is
// listed with the program that opened it, this test's binary.
func TestConnectionsNamePrograms(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("programs are found by the Linux look-up here")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := NewController(Options{LogOutput: io.Discard})
	if err := c.Start(context.Background(), Config{Final: TargetDirect, Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	_, port := splitPort(t, nettest.TCPEcho(t).String())
	conn, rep, _ := socksRequest(t, c.Status().Listen, 1, "127.0.0.1", port)
	if rep != 0 {
		t.Fatalf("reply %#x", rep)
	}
	defer conn.Close()
	var got string
	waitFor(t, func() bool {
		list := c.Connections()
		if len(list) == 1 {
			got = list[0].Process
		}
		return got != ""
	})
	if got != self {
		t.Fatalf("Process = %q, want %q (%q: not found)", got, self, flow.ProcessUnknown)
	}
	// Kept: the next listing does not look it up again.
	if again := c.Connections(); len(again) != 1 || again[0].Process != self {
		t.Fatalf("second listing: %+v", again)
	}
}
