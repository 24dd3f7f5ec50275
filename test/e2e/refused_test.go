package e2e

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/test/harness"
)

// targetRefused dials, through ob, a port closed on its server's machine
// (this one): a server that answers that it could not connect must say so
// as outbound.ErrTargetRefused, which a failover group does not count
// against it (core/group TestTargetRefusedIsNotTheMember).
func targetRefused(t *testing.T, ob outbound.Outbound) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	dst, err := flow.ParseAddr(closed)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := ob.DialContext(ctx, "tcp", dst)
	if err == nil {
		c.Close()
		t.Fatalf("a dial to the closed %s succeeded", closed)
	}
	if !errors.Is(err, outbound.ErrTargetRefused) {
		t.Fatalf("a dial to the closed %s: %v; want it to wrap outbound.ErrTargetRefused", closed, err)
	}
}

// TestTargetRefusedSingBox: sing-box v1.14.1's Hysteria2 server says that
// it could not connect, and Skiff reads that as the destination's failure
// (the official Hysteria 2 server and sshd are checked in their own
// tests). Through its AnyTLS server a stream to a closed destination
// opens and then ends: there is no refusal to read.
func TestTargetRefusedSingBox(t *testing.T) {
	for _, kind := range []harness.Kind{harness.Hysteria2} {
		t.Run(string(kind), func(t *testing.T) {
			s := newServer(t, setup{kind: kind})
			startServer(t, s)
			ob := linkOutbound(t, s.Link(s.Trusting()), nil)
			echo := harness.TCPEcho(t)
			// The server is up: a flow goes through first.
			deadline := time.Now().Add(15 * time.Second)
			for {
				err := echoThroughErr(t, ob, echo, 4<<10)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no flow through sing-box's %s server: %v", kind, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			targetRefused(t, ob)
		})
	}
}
