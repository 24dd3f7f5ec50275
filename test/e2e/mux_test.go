package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/test/harness"
)

// withInbound returns s's sing-box configuration with edit applied to its
// inbound (multiplex, tls.ech: what the harness does not write).
func withInbound(t *testing.T, s *harness.Server, edit func(in map[string]any)) []byte {
	t.Helper()
	b, err := s.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg["inbounds"].([]any)[0].(map[string]any))
	b, err = json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startConfig starts sing-box with cfg serving s and waits for its port.
func startConfig(t *testing.T, s *harness.Server, cfg []byte) *harness.Process {
	t.Helper()
	p := harness.SingBox(t, "sing-box-server", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, s.Addr()); err != nil {
		t.Fatal(err)
	}
	return p
}

// linkOutbound parses link, lets edit change the node, and returns
// Skiff's outbound for it (the engine's own constructor).
func linkOutbound(t *testing.T, l string, edit func(*node.Node)) outbound.Outbound {
	t.Helper()
	n, err := link.Parse(l)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(n)
	}
	ob, err := protocol.NewOutbound(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ob.Close() })
	return ob
}

// echoThrough dials echo through ob and echoes size bytes, checked by
// SHA-256.
func echoThrough(t *testing.T, ob outbound.Outbound, echo string, size int) {
	t.Helper()
	if err := echoThroughErr(t, ob, echo, size); err != nil {
		t.Fatal(err)
	}
}

func echoThroughErr(t *testing.T, ob outbound.Outbound, echo string, size int) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dst, err := flow.ParseAddr(echo)
	if err != nil {
		return err
	}
	start := time.Now()
	c, err := ob.DialContext(ctx, "tcp", dst)
	if err != nil {
		return fmt.Errorf("dial %s: %w", echo, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	echoOver(t, c, size, start)
	return nil
}

// udpThrough sends datagrams of sizes to a UDP echo through ob and
// checks each comes back intact.
func udpThrough(t *testing.T, ob outbound.Outbound, sizes ...int) {
	t.Helper()
	echo, err := flow.ParseAddr(harness.UDPEcho(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc, err := ob.ListenPacket(ctx, echo)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	buf := make([]byte, 65535)
	for _, n := range sizes {
		p := make([]byte, n)
		rand.Read(p)
		ok := false
		for try := 0; try < 3 && !ok; try++ {
			if _, err := pc.WriteTo(p, echo); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			pc.SetReadDeadline(time.Now().Add(2 * time.Second))
			m, _, err := pc.ReadFrom(buf)
			ok = err == nil && bytes.Equal(buf[:m], p)
		}
		if !ok {
			t.Errorf("%d-byte datagram did not come back intact", n)
		}
	}
}

// muxCases are the outer protocols multiplex runs under in the tests.
var muxOuter = []harness.Kind{harness.VLESSTCP, harness.TrojanTLS, harness.VMessTLS}

// TestMultiplex runs Skiff's sing-mux client against sing-box inbounds
// with multiplex.enabled, for each multiplexer with and without padding
// (a padding server refuses unpadded clients, so padding is checked
// both ways): 16 MiB echoed both ways with a hash check, 8 flows at once
// over the sessions, UDP, and a server restart (the dead sessions fail
// and new ones are dialled).
func TestMultiplex(t *testing.T) {
	harness.NeedSingBox(t)
	for i, proto := range []string{node.MultiplexSmux, node.MultiplexYamux, node.MultiplexH2} {
		for _, padding := range []bool{false, true} {
			kind := muxOuter[i%len(muxOuter)]
			if padding {
				kind = muxOuter[(i+1)%len(muxOuter)]
			}
			t.Run(fmt.Sprintf("%s/padding=%v/%s", proto, padding, kind), func(t *testing.T) {
				testMultiplex(t, newServer(t, setup{kind: kind}), proto, padding)
			})
		}
		// Shadowsocks 2022: sing-box's server writes empty chunks on its
		// multiplexed streams, which the client skips.
		t.Run(fmt.Sprintf("%s/padding=%v/shadowsocks-2022", proto, i == 1), func(t *testing.T) {
			testMultiplex(t, newSSServer(t, ssSetup{method: "2022-blake3-aes-128-gcm"}), proto, i == 1)
		})
	}
}

func testMultiplex(t *testing.T, s *harness.Server, proto string, padding bool) {
	cfg := withInbound(t, s, func(in map[string]any) {
		in["multiplex"] = map[string]any{"enabled": true, "padding": padding}
	})
	server := startConfig(t, s, cfg)
	ob := linkOutbound(t, s.Link(s.Trusting()), func(n *node.Node) {
		n.Multiplex = proto
		n.MultiplexOptions = &node.MultiplexOptions{MaxConnections: 2, MinStreams: 2, Padding: padding}
	})
	echo := harness.TCPEcho(t)
	t.Run("tcp-echo-16MiB", func(t *testing.T) {
		echoThrough(t, ob, echo, 16<<20)
		// sing-box accepts plain connections on a multiplex inbound too:
		// its log shows the flow came as a multiplexed stream.
		if !strings.Contains(server.Output(), "inbound multiplex connection to "+echo) {
			t.Fatal("the server saw no multiplexed stream")
		}
	})
	t.Run("parallel", func(t *testing.T) {
		parallelEcho(t, ob, echo, 8, 1<<20)
	})
	t.Run("udp", func(t *testing.T) { udpThrough(t, ob, 1, 512, 1400, 3000, 8192) })
	t.Run("server-restart", func(t *testing.T) {
		server.Stop()
		startConfig(t, s, cfg)
		echoAfterRestart(t, ob, echo)
		echoThrough(t, ob, echo, 1<<20)
	})
	// A client without padding is refused by a padding server, and the
	// other way round the server reads garbage: either way the setting
	// matters, so padding is on the wire.
	t.Run("padding-mismatch", func(t *testing.T) {
		if !padding {
			t.Skip("only a padding server refuses")
		}
		other := linkOutbound(t, s.Link(s.Trusting()), func(n *node.Node) { n.Multiplex = proto })
		if err := echoOnceThrough(other, echo, 1024); err == nil {
			t.Fatal("an unpadded session passed a padding server")
		}
	})
}

// echoAfterRestart waits up to 30 s for an echo through ob to work again
// after the server's restart (the old connections die; the next flows
// dial anew).
func echoAfterRestart(t *testing.T, ob outbound.Outbound, echo string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := echoOnceThrough(ob, echo, 64<<10)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no echo within 30 s of the server's restart: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// parallelEcho runs n echoes of size bytes through ob at once.
func parallelEcho(t *testing.T, ob outbound.Outbound, echo string, n, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- echoThroughErr(t, ob, echo, size)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// echoOnceThrough is one short echo through ob, as an error.
func echoOnceThrough(ob outbound.Outbound, echo string, size int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dst, err := flow.ParseAddr(echo)
	if err != nil {
		return err
	}
	c, err := ob.DialContext(ctx, "tcp", dst)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	p := make([]byte, size)
	rand.Read(p)
	if _, err := c.Write(p); err != nil {
		return err
	}
	got := make([]byte, size)
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, p) {
		return fmt.Errorf("echo differs")
	}
	return nil
}
