package core

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/direct"
	"github.com/skiffvpn/skiff/core/route"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestSniffedHostInConnections sends a TLS ClientHello on a TUN flow to an
// address and expects its server name in the connection table.
func TestSniffedHostInConnections(t *testing.T) {
	st := stats.New()
	eng := NewEngine(&route.Final{Name: "direct", Outbound: direct.New(nil)}, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	echo := nettest.TCPEcho(t).String()
	dst, _ := flow.ParseAddr(echo)

	// The app's side is a real TCP connection, as gonet's is a TCP conn
	// with half-close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	appConn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer appConn.Close()
	served, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- eng.HandleStream(ctx, flow.Metadata{Network: flow.TCP, Destination: dst, Inbound: "tun"},
			func() (net.Conn, error) { return served, nil })
	}()
	go tls.Client(appConn, &tls.Config{ServerName: "sniffed.example"}).Handshake() // the echo server answers nonsense; only the hello matters

	deadline := time.Now().Add(5 * time.Second)
	for {
		cs := st.Connections()
		if len(cs) == 1 && cs[0].Host == "sniffed.example" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections = %+v, want host sniffed.example", cs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}
