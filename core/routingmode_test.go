package core

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/internal/nettest"
)

func TestParseRouting(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Routing
		ok   bool
	}{
		{"", RoutingRule, true},
		{"rule", RoutingRule, true},
		{"global", RoutingGlobal, true},
		{"direct", RoutingDirect, true},
		{"Global", "", false},
		{"proxy", "", false},
		{"tun", "", false},
		{"global\x00", "", false},
	} {
		got, err := ParseRouting(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseRouting(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestRoutingSets: what each routing sends where, for a flow a rule sends
// direct, one to a blocked port, a public one and a LAN address.
func TestRoutingSets(t *testing.T) {
	cfg := &Config{
		Nodes: []*node.Node{testNode()},
		Rules: []rule.Rule{
			{DomainSuffix: []string{"direct.test"}, Target: TargetDirect},
			{Ports: []rule.PortRange{{From: 25, To: 25}}, Target: TargetBlock},
		},
	}
	rt, err := buildRouting(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.close()
	flows := []string{"www.direct.test:443", "example.com:25", "example.com:443", "192.168.1.1:80", "10.0.0.1:53"}
	for _, tt := range []struct {
		routing Routing
		want    []string // per flow
	}{
		{RoutingRule, []string{TargetDirect, TargetBlock, TargetProxy, TargetProxy, TargetProxy}},
		{RoutingGlobal, []string{TargetProxy, TargetProxy, TargetProxy, TargetDirect, TargetDirect}},
		{RoutingDirect, []string{TargetDirect, TargetDirect, TargetDirect, TargetDirect, TargetDirect}},
		{"", []string{TargetDirect, TargetBlock, TargetProxy, TargetProxy, TargetProxy}},
	} {
		if err := rt.setRouting(tt.routing); err != nil {
			t.Fatalf("%q: %v", tt.routing, err)
		}
		for i, dst := range flows {
			a, err := flow.ParseAddr(dst)
			if err != nil {
				t.Fatal(err)
			}
			ob, name, err := rt.router.Route(&flow.Metadata{Network: flow.TCP, Destination: a})
			if err != nil || name != tt.want[i] || ob != rt.targets[name] {
				t.Errorf("%q: %s went to %q (%v), want %q", tt.routing, dst, name, err, tt.want[i])
			}
		}
	}
	if err := rt.setRouting("everything"); err == nil {
		t.Error("an unknown routing was taken")
	}
	if rt.routing != RoutingRule {
		t.Errorf("after a refused routing: %q, want the one before", rt.routing)
	}

	// Without a route there is nothing to send every flow through.
	noRoute, err := buildRouting(context.Background(), &Config{Final: TargetDirect}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer noRoute.close()
	if err := noRoute.setRouting(RoutingGlobal); err == nil {
		t.Error("global routing without a route was taken")
	}
	if err := noRoute.setRouting(RoutingDirect); err != nil {
		t.Errorf("direct routing without a route: %v", err)
	}
}

// TestSetRoutingLive runs the core with a real Trojan server as its route
// and a rule sending localhost direct: switched to global, the next flow
// to localhost goes through the server while the flow opened before stays
// up on its direct connection; switched to direct, the next one skips the
// server again. The status reports each routing.
func TestSetRoutingLive(t *testing.T) {
	srv := startTrojanRelay(t, "routing-secret")
	c := NewController(Options{LogOutput: io.Discard})
	events, cancel := c.Subscribe(16)
	defer cancel()
	cfg := Config{
		Nodes: []*node.Node{{Name: "relay", Protocol: node.Trojan, Server: "127.0.0.1", Port: srv.addr.Port(),
			TLS: &node.TLS{SNI: "trojan.test", Insecure: true, PinSHA256: srv.pin}, Trojan: &node.TrojanOptions{Password: "routing-secret"}}},
		Rules:  []rule.Rule{{Domain: []string{"localhost"}, Target: TargetDirect}},
		Listen: "127.0.0.1:0",
	}
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if st := c.Status(); st.Routing != RoutingRule {
		t.Fatalf("status routing %q, want rule", st.Routing)
	}
	proxy := c.Status().Listen
	_, port := splitPort(t, nettest.TCPEcho(t).String())
	open := func() net.Conn {
		t.Helper()
		conn, rep, _ := socksRequest(t, proxy, 1, "localhost", port)
		if rep != 0 {
			t.Fatalf("SOCKS reply %d", rep)
		}
		echo(t, conn, "ping")
		return conn
	}
	before := open()
	defer before.Close()
	if n := srv.dials.Load(); n != 0 {
		t.Fatalf("under the rules the flow to localhost reached the server (%d dials)", n)
	}

	if err := c.SetRouting(RoutingGlobal); err != nil {
		t.Fatal(err)
	}
	waitRoutingEvent(t, events, RoutingGlobal)
	through := open()
	defer through.Close()
	if n := srv.dials.Load(); n != 1 {
		t.Errorf("global: the next flow to localhost made %d dials through the server, want 1", n)
	}
	echo(t, before, "still up") // the flow opened before is left alone
	if st := c.Status(); st.Routing != RoutingGlobal {
		t.Errorf("status routing %q, want global", st.Routing)
	}

	if err := c.SetRouting(RoutingDirect); err != nil {
		t.Fatal(err)
	}
	waitRoutingEvent(t, events, RoutingDirect)
	open().Close()
	if n := srv.dials.Load(); n != 1 {
		t.Errorf("direct: a flow reached the server (%d dials, want still 1)", n)
	}
	echo(t, through, "through") // the global one too
	c.Stop()
	if err := c.SetRouting(RoutingGlobal); err != ErrNotRunning {
		t.Errorf("SetRouting while stopped: %v, want ErrNotRunning", err)
	}
}

// echo writes s on conn and wants it back.
func echo(t *testing.T, conn net.Conn, s string) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
	buf := make([]byte, len(s))
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != s {
		t.Fatalf("echo of %q: %q, %v", s, buf, err)
	}
}

func waitRoutingEvent(t *testing.T, events <-chan Event, want Routing) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Kind == EventState && e.Status.Routing == want {
				return
			}
		case <-timeout:
			t.Fatalf("no state event with routing %q", want)
		}
	}
}

// trojanRelay is a Trojan server (TCP CONNECT only) that dials each
// request's destination and relays: a real proxy on loopback.
type trojanRelay struct {
	addr  netip.AddrPort
	pin   string
	dials atomic.Int32
}

func startTrojanRelay(t *testing.T, password string) *trojanRelay {
	sum := sha256.Sum224([]byte(password))
	key := hex.EncodeToString(sum[:])
	s := &trojanRelay{}
	s.addr, s.pin = nettest.StreamServer(t, nettest.StreamSpec{TLS: true}, "trojan.test", func(rw io.ReadWriter) {
		br := bufio.NewReader(rw)
		head := make([]byte, len(key)+4) // key CRLF cmd atyp
		if _, err := io.ReadFull(br, head); err != nil || string(head[:len(key)]) != key || head[len(key)+2] != 1 {
			return
		}
		var host string
		switch head[len(key)+3] {
		case 1:
			b := make([]byte, 4)
			io.ReadFull(br, b)
			host = netip.AddrFrom4([4]byte(b)).String()
		case 3:
			n, _ := br.ReadByte()
			b := make([]byte, n)
			io.ReadFull(br, b)
			host = string(b)
		default:
			return
		}
		tail := make([]byte, 4) // port CRLF
		if _, err := io.ReadFull(br, tail); err != nil {
			return
		}
		up, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(tail)))))
		if err != nil {
			return
		}
		defer up.Close()
		s.dials.Add(1)
		go io.Copy(up, br)
		io.Copy(rw, up)
	})
	return s
}
