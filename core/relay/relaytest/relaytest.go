// Package relaytest checks, for the tests of the conns a relay carries
// (protocol streams, inbound conns), that an idle flow holds no read
// buffer: the conn's WaitRead (readwait.Waiter) lets the relay wait
// without one, and the conn itself keeps none either.
package relaytest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// Flow is a relayed stream under test: App is the test's end, whose bytes
// the relay carries to an echo and back; Bufs are the relay's buffers.
type Flow struct {
	App  net.Conn
	Bufs *relay.Buffers
	done chan error
}

// Relay relays between a loopback TCP conn and up (which must lead to an
// echo) on fresh buffers and returns the flow, whose App is the other end
// of the TCP conn (a socket: the upload direction can wait too). The relay
// ends with the test.
func Relay(t *testing.T, up net.Conn) *Flow {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	app, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	appRelay, err := ln.Accept()
	if err != nil {
		app.Close()
		t.Fatal(err)
	}
	f := &Flow{App: app, Bufs: relay.NewBuffers(0), done: make(chan error, 1)}
	go func() { f.done <- relay.Stream(context.Background(), f.Bufs, appRelay, up, nil, nil) }()
	t.Cleanup(func() {
		app.Close()
		up.Close()
	})
	return f
}

// Started returns a Flow for a relay the caller started on bufs, with app
// as the test's end; done receives the relay's result.
func Started(app net.Conn, bufs *relay.Buffers, done chan error) *Flow {
	return &Flow{App: app, Bufs: bufs, done: done}
}

// Done receives the relay's result once it has ended.
func (f *Flow) Done() <-chan error { return f.done }

// IdleHoldsNoBuffer echoes 1 MiB through f, checks that the flow then
// holds no relay buffer and that own (the conn's own buffers, nil for
// none) reports none either, echoes a few bytes to see that the idle
// flow still carries them, checks again, and closes the flow, which must
// end without an error.
func IdleHoldsNoBuffer(t *testing.T, f *Flow, own func() (held bool, state string)) {
	t.Helper()
	f.App.SetDeadline(time.Now().Add(30 * time.Second))
	echo := func(data []byte) {
		t.Helper()
		werr := make(chan error, 1)
		go func() { _, err := f.App.Write(data); werr <- err }()
		got := make([]byte, len(data))
		if _, err := io.ReadFull(f.App, got); err != nil {
			t.Fatalf("echo of %d bytes: %v", len(data), err)
		}
		if err := <-werr; err != nil {
			t.Fatalf("echo of %d bytes: write: %v", len(data), err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("the echo of %d bytes came back altered", len(data))
		}
	}
	idle := func(what string) {
		t.Helper()
		nettest.Eventually(t, what, func() (bool, string) {
			held, state := false, ""
			if own != nil {
				held, state = own()
			}
			return !held && f.Bufs.Held() == 0, fmt.Sprintf("relay buffers held %d; the conn's own: %v %s", f.Bufs.Held(), held, state)
		})
	}
	echo(bytes.Repeat([]byte("0123456789abcdef"), 64<<10))
	idle("after a 1 MiB echo")
	echo([]byte("next"))
	idle("idle again")
	f.App.Close()
	select {
	case err := <-f.Done():
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end 10 s after the app closed")
	}
}
