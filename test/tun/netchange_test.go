package tun_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// Uplink B of the client namespace (TEST-NET-1), beside the lab's A.
const (
	upBCli4 = "192.0.2.1"
	upBSrv4 = "192.0.2.2"
)

// addUplinkB joins the namespaces by a second veth, B, whose client end
// has upBCli4; the default route stays on A.
func (l *lab) addUplinkB(t *testing.T) (vethA, vethB string) {
	t.Helper()
	id := strings.TrimPrefix(l.cli, "tuntest-c")
	vethA, vethB = "vc"+id, "vb"+id
	run(t, "ip", "link", "add", vethB, "netns", l.cli, "type", "veth", "peer", "name", "wb"+id, "netns", l.srv)
	run(t, "ip", "-n", l.cli, "addr", "add", upBCli4+"/24", "dev", vethB)
	run(t, "ip", "-n", l.srv, "addr", "add", upBSrv4+"/24", "dev", "wb"+id)
	run(t, "ip", "-n", l.cli, "link", "set", vethB, "up")
	run(t, "ip", "-n", l.srv, "link", "set", "wb"+id, "up")
	return vethA, vethB
}

// dialLoop is a client in the client namespace, started before a change,
// that makes new connections through the tunnel once told to: the time it
// reports is the network's, not the time to start a process.
type dialLoop struct{ h *helper }

func (l *lab) startDialLoop(t *testing.T, target string) *dialLoop {
	t.Helper()
	h := l.start(helperEnv+"=client", "SKIFF_TUN_ARGS=dialloop "+target)
	if line := h.line(t, 10*time.Second); line != "ready" {
		t.Fatalf("dialloop: %q", line)
	}
	return &dialLoop{h: h}
}

// first tells the loop to start and returns how long until its first
// connection succeeded (-1: none did within 15 s).
func (d *dialLoop) first(t *testing.T) time.Duration {
	t.Helper()
	d.h.send("go")
	var ms int
	if _, err := fmt.Sscanf(d.h.line(t, 20*time.Second), "ok dialloop %d", &ms); err != nil {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// TestSkiffRunTUNNetworkChange: a client with two uplinks. In the middle
// of a download through `skiff run --tun`, the default route moves from A
// to B and A's address is deleted (a Wi-Fi change). New connections
// succeed within 2 s, through a Hysteria2 and through a VLESS primary, and
// the Hysteria2 connection is dialled again from the new uplink's address
// (sing-box logs a connection from it).
func TestSkiffRunTUNNetworkChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		pick func(*proxies) proxy
	}{
		{"hysteria2", func(p *proxies) proxy { return p.hy2 }},
		{"vless-ws-tls", func(p *proxies) proxy { return p.vlessWS }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			harness.NeedSkiff(t)
			px := l.startProxies(t)
			vethA, vethB := l.addUplinkB(t)
			p := tc.pick(px)
			s := l.startSkiff(t, t.TempDir(), []string{p.link}, "--log-level", "debug")
			if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
				t.Fatalf("through skiff before the change: %v %s", err, out)
			}
			dl := l.start(helperEnv+"=client", fmt.Sprintf("SKIFF_TUN_ARGS=download %s:7004 100000", echoAddr4))
			time.Sleep(time.Second)

			loop := l.startDialLoop(t, echoAddr4+":7001")
			run(t, "ip", "-n", l.cli, "route", "replace", "default", "via", upBSrv4, "dev", vethB)
			run(t, "ip", "-n", l.cli, "addr", "del", cliAddr4+"/24", "dev", vethA)
			took := loop.first(t)
			t.Logf("%s: first new connection through the tunnel %v after the uplink changed", tc.name, took.Round(time.Millisecond))
			if took < 0 || took > 2*time.Second {
				t.Errorf("%s: no new connection within 2 s of the uplink change (first after %v)", tc.name, took)
			}
			dl.cmd.Process.Kill()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.p.WaitText(ctx, "netmon: network changed"); err != nil {
				t.Fatalf("skiff's log does not show the network change: %v", err)
			}
			if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
				t.Errorf("through skiff after it handled the change: %v %s", err, out)
			}
			if tc.name == "hysteria2" {
				// quic-go moves a connection to the new address by
				// itself (the server saw the old socket's port from the
				// new address); a re-dial is a new socket: a new port.
				before, after := serverPorts(px.proc.Output(), cliAddr4), serverPorts(px.proc.Output(), upBCli4)
				redialled := false
				for p := range after {
					if !before[p] {
						redialled = true
					}
				}
				t.Logf("sing-box saw ports %v from uplink A, %v from B", keys(before), keys(after))
				if !redialled {
					t.Error("no connection from a new socket after the change: the QUIC connection was not dialled again")
				}
			}
			s.stop(t)
		})
	}
}

// TestSkiffRunTUNResume stops `skiff run --tun` (Hysteria2) with SIGSTOP
// for 30 s while the server restarts (its connection state is gone, as a
// flushed NAT mapping would lose it), then SIGCONT: traffic goes through
// again within 2 s.
func TestSkiffRunTUNResume(t *testing.T) {
	l := newLab(t)
	harness.NeedSkiff(t)
	px := l.startProxies(t)
	s := l.startSkiff(t, t.TempDir(), []string{px.hy2.link})
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Fatalf("through skiff: %v %s", err, out)
	}
	loop := l.startDialLoop(t, echoAddr4+":7001")
	syscall.Kill(s.p.Pid(), syscall.SIGSTOP)
	stopped := time.Now()
	px.restart(t)
	time.Sleep(30*time.Second - time.Since(stopped))
	syscall.Kill(s.p.Pid(), syscall.SIGCONT)
	took := loop.first(t)
	t.Logf("after SIGSTOP 30 s with a server restart: first connection %v after SIGCONT", took.Round(time.Millisecond))
	if took < 0 || took > 2*time.Second {
		t.Errorf("no connection within 2 s of the resume (first after %v)", took)
	}
	s.stop(t)
}

// serverPorts returns the client ports sing-box's log shows Hysteria2
// connections from addr with.
func serverPorts(log, addr string) map[string]bool {
	ports := map[string]bool{}
	re := regexp.MustCompile(`inbound/hysteria2\[hysteria2\]: inbound (?:packet )?connection from ` + regexp.QuoteMeta(addr) + `:(\d+)`)
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		ports[m[1]] = true
	}
	return ports
}

func keys(m map[string]bool) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}

// TestSkiffRunTUNRepair removes some of skiff's routes and rules behind
// its back (as the OS does when an interface goes away) and then changes
// the default route: skiff puts back what is missing, and carries traffic.
func TestSkiffRunTUNRepair(t *testing.T) {
	l := newLab(t)
	harness.NeedSkiff(t)
	px := l.startProxies(t)
	s := l.startSkiff(t, t.TempDir(), []string{px.hy2.link})
	during := l.routing()
	run(t, "ip", "-n", l.cli, "route", "del", "default", "table", "5348")
	run(t, "ip", "-n", l.cli, "rule", "del", "priority", "5305")
	run(t, "ip", "-n", l.cli, "-6", "rule", "del", "priority", "5306")
	if l.routing() == during {
		t.Fatal("nothing was removed: the test proves nothing")
	}
	run(t, "ip", "-n", l.cli, "route", "add", "default", "via", srvAddr4, "metric", "500")
	if got, ok := l.waitRoutingWith(); !ok {
		t.Errorf("skiff did not put its routes and rules back after the network change:\n%s", got)
	}
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Errorf("through skiff after the repair: %v %s", err, out)
	}
	s.stop(t)
	if !strings.Contains(s.p.Output(), "re-installed what the network change removed") {
		t.Error("skiff's log does not say what it re-installed")
	}
}

// waitRoutingWith waits up to 5 s for the routes and rules that
// TestSkiffRunTUNRepair removed to be back, and returns what it saw.
func (l *lab) waitRoutingWith() (string, bool) {
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r4 := run(l.t, "ip", "-n", l.cli, "-4", "route", "show", "table", "5348")
		ru4 := run(l.t, "ip", "-n", l.cli, "-4", "rule")
		ru6 := run(l.t, "ip", "-n", l.cli, "-6", "rule")
		got = r4 + ru4 + ru6
		if strings.Contains(r4, "default dev skiff0") && strings.Contains(ru4, "5305:") && strings.Contains(ru6, "5306:") {
			return got, true
		}
	}
	return got, false
}
