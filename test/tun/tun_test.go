// Package tun_test runs Skiff's TUN device and netstack for real: in a
// network namespace, with the routes installed, apps' TCP and UDP (IPv4 and
// IPv6) reach a server in a second namespace through the TUN; the routing
// tables are compared before and after, also after a kill -9.
package tun_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

func TestMain(m *testing.M) {
	runHelper()
	sweepStaleLabs()
	os.Exit(m.Run())
}

// sweepStaleLabs deletes the namespaces (and their /etc/netns files) that
// an earlier run left behind when it could not run its cleanups (a test
// timeout ends the binary at once): those older than ten minutes with no
// process in them. A run in progress is younger, or has its server
// helper in its namespace.
func sweepStaleLabs() {
	if os.Geteuid() != 0 {
		return
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "tuntest-") {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < 10*time.Minute {
			continue
		}
		if pids, err := exec.Command("ip", "netns", "pids", name).Output(); err != nil || len(strings.TrimSpace(string(pids))) > 0 {
			continue
		}
		exec.Command("ip", "netns", "del", name).Run()
		os.RemoveAll(filepath.Join("/etc/netns", name))
	}
	entries, _ = os.ReadDir("/etc/netns")
	for _, e := range entries {
		info, err := e.Info()
		if !strings.HasPrefix(e.Name(), "tuntest-") || err != nil || time.Since(info.ModTime()) < 10*time.Minute {
			continue
		}
		if _, err := os.Stat(filepath.Join("/run/netns", e.Name())); os.IsNotExist(err) {
			os.RemoveAll(filepath.Join("/etc/netns", e.Name()))
		}
	}
}

// lab is a pair of namespaces joined by a veth: the client (where the TUN
// runs) and the server.
type lab struct {
	t        *testing.T
	cli, srv string
	srvIn    io.WriteCloser
}

// Addresses from the benchmarking (203.0.113.0/15) and documentation
// (2001:db8::/32) ranges: outside the private ranges that the default
// configuration keeps off the TUN, and never routed anywhere real.
const (
	cliAddr4 = "203.0.113.1"
	srvAddr4 = "203.0.113.2"
	cliAddr6 = "2001:db8::1"
	srvAddr6 = "2001:db8::2"
	// The echo, sink, source and UDP echo servers' own addresses, beyond
	// the server namespace's gateway (off the client's link, which the
	// routes leave to the LAN), and distinct from the proxy server's
	// (which is kept out of the TUN).
	echoAddr4 = "198.51.100.3"
	echoAddr6 = "2001:db8:1::3"
)

func need(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces and a TUN device")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("needs /dev/net/tun")
	}
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func newLab(t *testing.T) *lab {
	need(t)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, time.Now().UnixNano()%1000)
	l := &lab{t: t, cli: "tuntest-c" + id, srv: "tuntest-s" + id}
	if err := exec.Command("ip", "netns", "add", l.cli).Run(); err != nil {
		t.Skipf("cannot create a network namespace: %v", err)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", l.cli).Run() })
	run(t, "ip", "netns", "add", l.srv)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", l.srv).Run() })
	// No duplicate address detection: the link-local addresses would
	// otherwise appear in the tables in the middle of a comparison.
	for _, ns := range []string{l.cli, l.srv} {
		run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0")
	}
	run(t, "ip", "link", "add", "vc"+id, "netns", l.cli, "type", "veth", "peer", "name", "vs"+id, "netns", l.srv)
	for _, c := range [][]string{
		{"-n", l.cli, "link", "set", "lo", "up"},
		{"-n", l.srv, "link", "set", "lo", "up"},
		{"-n", l.cli, "addr", "add", cliAddr4 + "/24", "dev", "vc" + id},
		{"-n", l.srv, "addr", "add", srvAddr4 + "/24", "dev", "vs" + id},
		{"-n", l.cli, "addr", "add", cliAddr6 + "/64", "dev", "vc" + id, "nodad"},
		{"-n", l.srv, "addr", "add", srvAddr6 + "/64", "dev", "vs" + id, "nodad"},
		{"-n", l.srv, "addr", "add", echoAddr4 + "/32", "dev", "lo"},
		{"-n", l.srv, "addr", "add", echoAddr6 + "/128", "dev", "lo"},
		{"-n", l.cli, "link", "set", "vc" + id, "up"},
		{"-n", l.srv, "link", "set", "vs" + id, "up"},
		{"-n", l.cli, "route", "add", "default", "via", srvAddr4},
		{"-n", l.cli, "-6", "route", "add", "default", "via", srvAddr6},
	} {
		run(t, append([]string{"ip"}, c...)...)
	}
	srv := exec.Command("ip", "netns", "exec", l.srv, os.Args[0], "-test.run=^$")
	srv.Env = append(os.Environ(), helperEnv+"=server")
	in, _ := srv.StdinPipe()
	out, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	l.srvIn = in
	t.Cleanup(func() { in.Close(); srv.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("server did not start: %q", line)
	}
	return l
}

// routing returns the client namespace's rules and routes, all tables.
func (l *lab) routing() string {
	var b strings.Builder
	for _, c := range [][]string{
		{"-4", "rule", "show"}, {"-6", "rule", "show"},
		{"-4", "route", "show", "table", "all"}, {"-6", "route", "show", "table", "all"},
		{"link", "show"},
	} {
		b.WriteString(run(l.t, append([]string{"ip", "-n", l.cli}, c...)...))
	}
	return b.String()
}

// checkRoutes asks the kernel where packets would go with the default
// (strict) configuration in place.
func (l *lab) checkRoutes(t *testing.T) {
	t.Helper()
	veth := strings.Replace(l.cli, "tuntest-c", "vc", 1)
	for _, c := range []struct {
		args []string
		want string // in the answer; "" for a refusal
	}{
		{[]string{"route", "get", echoAddr4}, "dev skiff0"},
		{[]string{"-6", "route", "get", echoAddr6}, "dev skiff0"},
		// Skiff's own sockets (fwmark) leave by the main table.
		{[]string{"route", "get", echoAddr4, "mark", "0x534b"}, "dev " + veth},
		{[]string{"-6", "route", "get", echoAddr6, "mark", "0x534b"}, "dev " + veth},
		// Private ranges stay on the LAN…
		{[]string{"route", "get", "10.1.2.3"}, "dev " + veth},
		// …except DNS, which goes into the TUN wherever it is sent (strict).
		{[]string{"route", "get", "10.1.2.3", "ipproto", "udp", "dport", "53"}, "dev skiff0"},
		{[]string{"route", "get", "10.1.2.3", "ipproto", "tcp", "dport", "53"}, "dev skiff0"},
		// A socket bound to the physical interface finds no route through
		// the gateway (strict): the kernel's last resort treats the
		// destination as on-link, which reaches no further than the LAN.
		{[]string{"route", "get", "203.0.113.5", "oif", veth}, "!via"},
		{[]string{"-6", "route", "get", "2001:db8:ffff::5", "oif", veth}, "!via"},
	} {
		out, err := exec.Command("ip", append([]string{"-n", l.cli}, c.args...)...).CombinedOutput()
		if not, ok := strings.CutPrefix(c.want, "!"); ok {
			if err == nil && strings.Contains(string(out), not) {
				t.Errorf("ip %s: %s, want no %q", strings.Join(c.args, " "), strings.TrimSpace(string(out)), not)
			}
			continue
		}
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ip %s: allowed (%s), want refused", strings.Join(c.args, " "), strings.TrimSpace(string(out)))
		case c.want != "" && (err != nil || !strings.Contains(string(out), c.want)):
			t.Errorf("ip %s: %v %s, want %q", strings.Join(c.args, " "), err, strings.TrimSpace(string(out)), c.want)
		}
	}
}

// helper is a role of the test binary running in the client namespace.
type helper struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func (l *lab) start(env ...string) *helper {
	cmd := exec.Command("ip", "netns", "exec", l.cli, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	h := &helper{cmd: cmd, in: in, out: bufio.NewReader(out)}
	l.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return h
}

// line reads the helper's next output line, failing after d.
func (h *helper) line(t *testing.T, d time.Duration) string {
	t.Helper()
	c := make(chan string, 1)
	go func() { s, _ := h.out.ReadString('\n'); c <- strings.TrimSpace(s) }()
	select {
	case s := <-c:
		return s
	case <-time.After(d):
		t.Fatalf("no answer from helper within %s", d)
		return ""
	}
}

func (h *helper) send(s string) { fmt.Fprintln(h.in, s) }

// wantFlows checks that the tunnel's handler saw at least tcp and udp flows:
// that the traffic went through the TUN, not around it.
func (h *helper) wantFlows(t *testing.T, tcp, udp int) {
	t.Helper()
	h.send("stats")
	var gotTCP, gotUDP int
	fmt.Sscanf(h.line(t, 5*time.Second), "stats %d %d", &gotTCP, &gotUDP)
	if gotTCP < tcp || gotUDP < udp {
		t.Errorf("the TUN handler saw %d TCP and %d UDP flows, want ≥ %d and ≥ %d: traffic went around the TUN", gotTCP, gotUDP, tcp, udp)
	}
}

func (l *lab) startTunnel(state string, env ...string) *helper {
	h := l.start(append(env, helperEnv+"=tun", "SKIFF_TUN_STATE="+state)...)
	if s := h.line(l.t, 20*time.Second); !strings.HasPrefix(s, "ready") {
		l.t.Fatalf("tunnel did not start: %q", s)
	}
	return h
}

// client runs one client command in the client namespace.
func (l *lab) client(args string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", l.cli, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=client", "SKIFF_TUN_ARGS="+args)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestTunnelTCPUDP(t *testing.T) {
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "state.json")
	before := l.routing()
	h := l.startTunnel(state)

	during := l.routing()
	if !strings.Contains(during, "lookup 5348") {
		t.Fatalf("no rule into the TUN table:\n%s", during)
	}
	route := run(t, "ip", "-n", l.cli, "route", "get", echoAddr4)
	if !strings.Contains(route, "skiff0") {
		t.Fatalf("route to the server does not go into the TUN: %s", route)
	}
	l.checkRoutes(t)
	for _, c := range []string{
		"tcp " + echoAddr4 + ":7001",
		"tcp [" + echoAddr6 + "]:7001",
		"udp " + echoAddr4 + ":7003",
		"udp [" + echoAddr6 + "]:7003",
	} {
		out, err := l.client(c)
		if err != nil || !strings.HasPrefix(out, "ok") {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	}
	h.wantFlows(t, 2, 2)

	h.send("quit")
	if s := h.line(t, 15*time.Second); s != "closed" {
		t.Fatalf("tunnel did not close cleanly: %q", s)
	}
	h.cmd.Wait()
	if after := l.routing(); after != before {
		t.Errorf("routing differs after Close\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state file left after Close: %v", err)
	}
}

func TestTunnelKill9Cleanup(t *testing.T) {
	l := newLab(t)
	skiff := harness.NeedSkiff(t)
	state := filepath.Join(t.TempDir(), "state.json")
	before := l.routing()
	h := l.startTunnel(state)
	h.cmd.Process.Kill() // SIGKILL: nothing restored
	h.cmd.Wait()
	if l.routing() == before {
		t.Fatal("routing equals the original after kill -9: nothing was installed, the test proves nothing")
	}
	out, err := exec.Command("ip", "netns", "exec", l.cli, skiff, "cleanup", "--state", state).CombinedOutput()
	if err != nil {
		t.Fatalf("skiff cleanup: %v\n%s", err, out)
	}
	if after := l.routing(); after != before {
		t.Errorf("routing differs after skiff cleanup\nbefore:\n%s\nafter:\n%s", before, after)
	}
	out, err = exec.Command("ip", "netns", "exec", l.cli, skiff, "cleanup", "--state", state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nothing to clean") {
		t.Errorf("second skiff cleanup: %v %s", err, out)
	}

	// Killed again, and this time the next start cleans up by itself.
	h = l.startTunnel(state)
	h.cmd.Process.Kill()
	h.cmd.Wait()
	h = l.startTunnel(state)
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil {
		t.Errorf("tunnel started over a killed one's leftovers does not carry traffic: %v %s", err, out)
	}
	h.send("quit")
	if s := h.line(t, 15*time.Second); s != "closed" {
		t.Fatalf("tunnel did not close cleanly: %q", s)
	}
	h.cmd.Wait()
	if after := l.routing(); after != before {
		t.Errorf("routing differs after a start over leftovers and a clean stop\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestTunnelManyConnections(t *testing.T) {
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "state.json")
	h := l.startTunnel(state)
	const n = 500
	c := l.start(helperEnv+"=client", fmt.Sprintf("SKIFF_TUN_ARGS=many %s:7001 %d", echoAddr4, n))
	res := c.line(t, 60*time.Second)
	h.send("rss")
	peak := h.line(t, 10*time.Second)
	c.send("")
	c.cmd.Wait()
	if res != fmt.Sprintf("many %d ok 0 failed", n) {
		t.Fatalf("concurrent connections: %q", res)
	}
	time.Sleep(2 * time.Second)
	h.send("rss")
	idle := h.line(t, 10*time.Second)
	var rss, hwm, rssIdle int
	fmt.Sscanf(peak, "rss %d %d", &rss, &hwm)
	fmt.Sscanf(idle, "rss %d", &rssIdle)
	h.wantFlows(t, n, 0)
	t.Logf("%d connections through the TUN: RSS with all open %.1f MiB, peak %.1f MiB, idle after close %.1f MiB",
		n, float64(rss)/1024, float64(hwm)/1024, float64(rssIdle)/1024)
	h.send("quit")
	h.line(t, 15*time.Second)
}

var gbits = regexp.MustCompile(`([0-9.]+) Gbit/s`)

// TestTunnelThroughput sends bulk TCP through the TUN for a few seconds and
// reports the rate; SKIFF_TUN_CPUPROFILE=path profiles the tunnel process.
func TestTunnelThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("throughput run skipped in -short mode")
	}
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "state.json")
	var env []string
	if p := os.Getenv("SKIFF_TUN_CPUPROFILE"); p != "" {
		env = append(env, "SKIFF_TUN_CPUPROFILE="+p)
	}
	h := l.startTunnel(state, env...)
	for _, c := range []string{"bulk " + echoAddr4 + ":7002 2048", "download " + echoAddr4 + ":7004 2048"} {
		out, err := l.client(c)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
		if gbits.FindStringSubmatch(out) == nil {
			t.Fatalf("%s: %s", c, out)
		}
		t.Logf("TCP through the TUN (one flow, IPv4, app upload = bulk, app download = download): %s", out)
	}
	h.wantFlows(t, 2, 0)
	h.send("quit")
	h.line(t, 15*time.Second)
}

// TestTunnelNeedsPrivilege opens the TUN as an unprivileged user: the error
// must say what to do, and nothing may be left behind.
func TestTunnelNeedsPrivilege(t *testing.T) {
	need(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to drop privileges")
	}
	// A directory the unprivileged user can reach (t.TempDir's parent is
	// root's alone).
	dir, err := os.MkdirTemp("", "tuntest-nopriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	// The test binary must be reachable by nobody: copy it out of the
	// (root-only) build directory.
	bin := filepath.Join(dir, "tun.test")
	if out, err := exec.Command("cp", os.Args[0], bin).CombinedOutput(); err != nil {
		t.Fatalf("copy test binary: %v %s", err, out)
	}
	os.Chmod(bin, 0o755)
	state := filepath.Join(dir, "state.json")
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=tun", "SKIFF_TUN_STATE="+state, "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("an unprivileged user opened the TUN:\n%s", out)
	}
	if !strings.Contains(string(out), "TUN mode needs root or CAP_NET_ADMIN") || !strings.Contains(string(out), "setcap cap_net_admin+ep skiff") {
		t.Errorf("the error does not say what to do:\n%s", out)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state file left behind after a failed open: %v", err)
	}
}

// TestTunnelFollowsDefaultRoute moves the client namespace to another
// uplink while the TUN is up (the first link goes down, a default route
// appears on a second one, as when Wi-Fi drops and Ethernet takes over):
// Skiff's own sockets follow, and apps' traffic keeps flowing.
func TestTunnelFollowsDefaultRoute(t *testing.T) {
	l := newLab(t)
	id := strings.TrimPrefix(l.cli, "tuntest-c")
	run(t, "ip", "link", "add", "wc"+id, "netns", l.cli, "type", "veth", "peer", "name", "ws"+id, "netns", l.srv)
	for _, c := range [][]string{
		{"-n", l.cli, "addr", "add", "192.0.2.1/24", "dev", "wc" + id},
		{"-n", l.srv, "addr", "add", "192.0.2.2/24", "dev", "ws" + id},
		{"-n", l.cli, "link", "set", "wc" + id, "up"},
		{"-n", l.srv, "link", "set", "ws" + id, "up"},
	} {
		run(t, append([]string{"ip"}, c...)...)
	}
	h := l.startTunnel(filepath.Join(t.TempDir(), "state.json"))
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil {
		t.Fatalf("before the switch: %v %s", err, out)
	}
	run(t, "ip", "-n", l.cli, "link", "set", "vc"+id, "down")
	run(t, "ip", "-n", l.cli, "route", "replace", "default", "via", "192.0.2.2")
	if got := run(t, "ip", "-n", l.cli, "route", "get", echoAddr4, "mark", "0x534b"); !strings.Contains(got, "wc"+id) {
		t.Fatalf("marked route after the switch: %s", got)
	}
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Errorf("after the switch to the second uplink: %v %s", err, out)
	}
	h.wantFlows(t, 2, 0)
	h.send("quit")
	h.line(t, 15*time.Second)
}
