package tun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// Every way a run can end, and the kill switch that outlives it.

// waitRouting waits up to 10 s for the client namespace's routing to equal
// want, and reports whether it did.
func (l *lab) waitRouting(want string) (string, bool) {
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = l.routing(); got == want {
			return got, true
		}
	}
	return got, false
}

// statePID reads the pid recorded in a run's state file, waiting for the
// file to appear while the run is not done.
func statePID(t *testing.T, path string, done <-chan error) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("skiff ended (%v) before its TUN was up: its output was closed", err)
		default:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var st struct{ PID int }
		if json.Unmarshal(b, &st) == nil && st.PID > 0 {
			return st.PID
		}
	}
	t.Fatalf("no state file %s", path)
	return 0
}

// TestSkiffRunTUNExits ends `skiff run --tun` (no kill switch) in each way
// it can end but SIGTERM (TestSkiffRunTUN) and kill -9
// (TestSkiffRunTUNKill9): no rule that blocks traffic is left behind.
//   - SIGPIPE: its output goes to `head -3`, which exits (as in
//     `skiff run --tun … 2>&1 | head -3`); skiff goes on
//     carrying traffic (it used to die of SIGPIPE at its next log line and
//     leave strict route's prohibit rule), and SIGTERM then restores.
//   - SIGHUP (the terminal went away): a clean stop.
//   - SIGQUIT, a crash like an unrecovered panic (the runtime dumps the
//     goroutines and exits): the crash monitor restores.
func TestSkiffRunTUNExits(t *testing.T) {
	l := newLab(t)
	bin := harness.NeedSkiff(t)
	px := l.startProxies(t)
	before := l.routing()

	t.Run("sigpipe", func(t *testing.T) {
		state := t.TempDir()
		cmd := exec.Command("ip", "netns", "exec", l.cli, "sh", "-c",
			`mount --bind "$1" /run/skiff && shift && "$@" 2>&1 | head -3`, "sh", state,
			bin, "run", "--tun", "--link", px.hy2.link, "--log-level", "debug")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Process.Kill()
		})
		pid := statePID(t, filepath.Join(state, "tun-state.json"), done)
		// head has its three lines by now; the flows' debug lines hit the
		// closed pipe.
		for i := 0; i < 3; i++ {
			if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
				t.Fatalf("through skiff after its output closed: %v %s", err, out)
			}
		}
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("skiff (pid %d) died once its output was closed: %v", pid, err)
		}
		if l.routing() == before {
			t.Fatal("routing equals the original while skiff runs: the test proves nothing")
		}
		syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("skiff did not stop on SIGTERM")
		}
		if after, ok := l.waitRouting(before); !ok {
			t.Errorf("routing differs after skiff's output was closed and it stopped\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})

	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		log  string // in skiff's output
	}{
		{"sighup", syscall.SIGHUP, "core: stopped"},
		{"crash", syscall.SIGQUIT, "routes and rules restored after the crash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := l.startSkiff(t, t.TempDir(), []string{px.hy2.link})
			if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
				t.Fatalf("through skiff: %v %s", err, out)
			}
			syscall.Kill(s.p.Pid(), tc.sig)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			s.p.Wait(ctx)
			if after, ok := l.waitRouting(before); !ok {
				t.Errorf("routing differs after %s\nbefore:\n%s\nafter:\n%s", tc.name, before, after)
			}
			if !strings.Contains(s.p.Output(), tc.log) {
				t.Errorf("skiff's output after %s lacks %q", tc.name, tc.log)
			}
		})
	}
}

// sinkCounter counts, in the server namespace where its veth delivers
// them, the client's packets by class: to the proxy server's ports, DNS,
// to the LAN address (lanSrv4), and anything else (the echo and HTTP
// servers beyond it). Neighbour discovery and MLD are not counted.
type sinkCounter struct{ l *lab }

const (
	sinkTable = "skiffsink"
	lanCli4   = "192.168.77.1"
	lanSrv4   = "192.168.77.2"
)

func (l *lab) newSinkCounter(t *testing.T, px *proxies) *sinkCounter {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft (nftables)")
	}
	veth := strings.Replace(l.srv, "tuntest-s", "vs", 1)
	rules := fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	counter proxy {}
	counter dns {}
	counter lan {}
	counter other {}
	chain in {
		type filter hook prerouting priority -300; policy accept;
		iifname != "%[2]s" accept
		icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert, mld-listener-report, mld2-listener-report } accept
		ip daddr %[3]s udp dport %[4]d counter name proxy accept
		ip daddr %[3]s tcp dport { %[5]d, %[6]d } counter name proxy accept
		meta l4proto { tcp, udp } th dport 53 counter name dns accept
		ip daddr %[7]s counter name lan accept
		counter name other
	}
}
`, sinkTable, veth, srvAddr4, px.hy2.srv.Port, px.vlessWS.srv.Port, px.vlessTCP.srv.Port, lanSrv4)
	cmd := exec.Command("ip", "netns", "exec", l.srv, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	return &sinkCounter{l: l}
}

// reset zeroes the counters.
func (s *sinkCounter) reset(t *testing.T) {
	t.Helper()
	run(t, "ip", "netns", "exec", s.l.srv, "nft", "reset", "counters", "table", "inet", sinkTable)
}

func (s *sinkCounter) read(t *testing.T) map[string]int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", s.l.srv, "nft", "-j", "list", "counters", "table", "inet", sinkTable).Output()
	if err != nil {
		t.Fatalf("nft list counters: %v", err)
	}
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Name    string `json:"name"`
				Packets int    `json:"packets"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("nft -j: %v\n%s", err, out)
	}
	got := map[string]int{}
	for _, e := range doc.Nftables {
		if e.Counter != nil {
			got[e.Counter.Name] = e.Counter.Packets
		}
	}
	return got
}

// killSwitchTable reports whether the client namespace has the kill
// switch's nftables table.
func (l *lab) killSwitchTable() bool {
	return exec.Command("ip", "netns", "exec", l.cli, "nft", "list", "table", "inet", "skiff_killswitch").Run() == nil
}

// tryOutside makes the connections that the kill switch must stop once
// skiff is gone: TCP and UDP to the echo servers (v4 and v6), a name
// lookup (DNS to the server namespace), HTTP by name. It returns the ones
// that succeeded.
func (l *lab) tryOutside(t *testing.T) []string {
	t.Helper()
	var through []string
	for _, c := range []string{
		"tcp " + echoAddr4 + ":7001",
		"tcp [" + echoAddr6 + "]:7001",
		"udp " + echoAddr4 + ":7003",
		"resolve " + testName,
	} {
		if out, err := l.client(c); err == nil && strings.HasPrefix(out, "ok") {
			through = append(through, c)
		}
	}
	if out, err := l.curl("--max-time", "3", "http://"+echoAddr4+"/ks"); err == nil && strings.HasPrefix(out, httpMarker) {
		through = append(through, "http")
	}
	return through
}

// TestSkiffRunTUNKillSwitch: `skiff run --tun --kill-switch` with a real
// Hysteria2 server. Killed with -9, it leaves the machine cut off: no
// connection outside the tunnel succeeds and the sink in the server
// namespace receives no packet of them, DNS included. A restart carries
// traffic through the tunnel again; a stop keeps the kill switch; a run
// without --kill-switch removes it and the direct path works. With
// --kill-switch-allow-lan the LAN passes, and nothing else (not even DNS
// to the LAN).
func TestSkiffRunTUNKillSwitch(t *testing.T) {
	l := newLab(t)
	harness.NeedSkiff(t)
	needCurl(t)
	l.useResolver(t)
	px := l.startProxies(t)
	sink := l.newSinkCounter(t, px)
	state := t.TempDir()
	t.Cleanup(func() {
		exec.Command("ip", "netns", "exec", l.cli, "nft", "delete", "table", "inet", "skiff_killswitch").Run()
	})

	if got := l.tryOutside(t); len(got) != 5 {
		t.Fatalf("before skiff runs only %v of the direct connections succeed: the lab is broken", got)
	}

	s := l.startSkiff(t, state, []string{px.hy2.link}, "--kill-switch")
	if !l.killSwitchTable() {
		t.Fatal("no nftables table inet skiff_killswitch while skiff runs with --kill-switch")
	}
	sink.reset(t)
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Fatalf("through the tunnel with the kill switch on: %v %s", err, out)
	}
	if c := sink.read(t); c["proxy"] == 0 || c["other"] != 0 || c["dns"] != 0 {
		t.Errorf("with skiff running the sink counted %v: want packets to the proxy only", c)
	}

	s.p.Kill()
	sink.reset(t)
	if got := l.tryOutside(t); len(got) > 0 {
		t.Errorf("after kill -9 with the kill switch on, these succeeded outside the tunnel: %v", got)
	}
	c := sink.read(t)
	t.Logf("after kill -9: the sink counted %v", c)
	if c["dns"] != 0 || c["other"] != 0 || c["lan"] != 0 {
		t.Errorf("after kill -9 with the kill switch on the sink received packets: %v", c)
	}

	s = l.startSkiff(t, state, []string{px.hy2.link}, "--kill-switch")
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Errorf("after a restart, through the tunnel: %v %s", err, out)
	}
	s.stop(t)
	if !l.killSwitchTable() {
		t.Error("the kill switch is gone after a clean stop; only turning it off may remove it")
	}
	if got := l.tryOutside(t); len(got) > 0 {
		t.Errorf("after a clean stop with the kill switch on, these succeeded: %v", got)
	}

	// The local proxy (no TUN) reaches its server through the kill switch:
	// its sockets carry the mark while one is in force.
	proxy := harness.Start(t, "skiff-proxy", "ip", "netns", "exec", l.cli, "sh", "-c",
		`mount --bind "$1" /run/skiff && shift && exec "$@"`, "sh", state,
		harness.NeedSkiff(t), "run", "--link", px.vlessWS.link, "--listen", "127.0.0.1:11080")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	if err := proxy.WaitText(ctx, "skiff: listening"); err != nil {
		t.Fatalf("skiff run (proxy mode): %v", err)
	}
	cancel()
	out, err := exec.Command("ip", "netns", "exec", l.cli, "curl", "-sS", "--max-time", "10",
		"-x", "socks5h://127.0.0.1:11080", "http://"+echoAddr4+"/proxy").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), httpMarker) {
		t.Errorf("the local proxy with the kill switch in force: %v %s", err, out)
	}
	proxy.Stop()

	// The setting off: a run without it removes the kill switch.
	s = l.startSkiff(t, state, []string{px.hy2.link})
	s.stop(t)
	if l.killSwitchTable() {
		t.Error("the kill switch is still there after a run without --kill-switch")
	}
	if got := l.tryOutside(t); len(got) != 5 {
		t.Errorf("with the kill switch off only %v of the direct connections succeed", got)
	}

	t.Run("allow-lan", func(t *testing.T) {
		veth := func(ns string) string {
			if ns == l.cli {
				return strings.Replace(l.cli, "tuntest-c", "vc", 1)
			}
			return strings.Replace(l.srv, "tuntest-s", "vs", 1)
		}
		run(t, "ip", "-n", l.cli, "addr", "add", lanCli4+"/24", "dev", veth(l.cli))
		run(t, "ip", "-n", l.srv, "addr", "add", lanSrv4+"/24", "dev", veth(l.srv))
		// The resolver on the LAN: DNS to it must not pass either.
		conf := "nameserver " + lanSrv4 + "\noptions timeout:2 attempts:1\n"
		if err := os.WriteFile(filepath.Join("/etc/netns", l.cli, "resolv.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		s := l.startSkiff(t, state, []string{px.hy2.link}, "--kill-switch", "--kill-switch-allow-lan")
		s.p.Kill()
		sink.reset(t)
		if out, err := l.client("tcp " + lanSrv4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
			t.Errorf("the LAN with --kill-switch-allow-lan: %v %s", err, out)
		}
		if got := l.tryOutside(t); len(got) > 0 {
			t.Errorf("with --kill-switch-allow-lan after kill -9, these beyond the LAN succeeded: %v", got)
		}
		c := sink.read(t)
		t.Logf("allow-LAN after kill -9: the sink counted %v", c)
		if c["lan"] == 0 || c["dns"] != 0 || c["other"] != 0 {
			t.Errorf("allow-LAN: the sink counted %v; want LAN packets only", c)
		}
		out, err := exec.Command("ip", "netns", "exec", l.cli, harness.NeedSkiff(t), "cleanup", "--state", s.state).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "kill switch removed") {
			t.Errorf("skiff cleanup: %v %s", err, out)
		}
		if l.killSwitchTable() {
			t.Error("skiff cleanup left the kill switch")
		}
	})
}

// TestSkiffRunTUNKillSwitchStubResolver is a host whose resolv.conf names
// a local stub resolver (as systemd-resolved's 127.0.0.53 is on Ubuntu),
// with the kill switch in force before Skiff connects, as at boot: the
// stub's own queries to its upstream are dropped, so Skiff must ask the
// upstream that the stub lists (/run/systemd/resolve/resolv.conf) itself,
// from its own sockets, to resolve its server's name.
func TestSkiffRunTUNKillSwitchStubResolver(t *testing.T) {
	l := newLab(t)
	harness.NeedSkiff(t)
	l.useResolver(t)
	px := l.startProxies(t)
	t.Cleanup(func() {
		exec.Command("ip", "netns", "exec", l.cli, "nft", "delete", "table", "inet", "skiff_killswitch").Run()
	})
	conf := "nameserver 127.0.0.53\noptions timeout:2 attempts:2\n"
	if err := os.WriteFile(filepath.Join("/etc/netns", l.cli, "resolv.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	stub := harness.Start(t, "stub", "ip", "netns", "exec", l.cli, "env", helperEnv+"=stub", "SKIFF_TUN_ARGS="+srvAddr4+":53",
		os.Args[0], "-test.run=^$")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := stub.WaitText(ctx, "stub ready"); err != nil {
		t.Fatalf("the stub resolver: %v", err)
	}
	if out, err := l.client("resolve " + serverName); err != nil {
		t.Fatalf("the lab's stub resolver does not resolve %s: %v %s", serverName, err, out)
	}
	// The stub's upstream, where systemd-resolved lists it, in skiff's own
	// mount namespace only.
	if err := os.MkdirAll("/run/systemd", 0o755); err != nil {
		t.Fatal(err)
	}
	setup := `mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/resolve && echo "nameserver ` + srvAddr4 + `" >/run/systemd/resolve/resolv.conf`

	// The kill switch in force and Skiff not running: a run killed.
	state := t.TempDir()
	s := l.startSkiff(t, state, []string{px.hy2.link}, "--kill-switch")
	s.p.Kill()
	if !l.killSwitchTable() {
		t.Fatal("no kill switch after kill -9")
	}
	if out, err := l.client("resolve " + serverName); err == nil {
		t.Fatalf("with the kill switch in force and no tunnel the stub still resolves (%s): the lab does not show the case", out)
	}

	for _, link := range []string{px.hy2.link, px.vlessWS.link} {
		named := strings.Replace(link, srvAddr4+":", serverName+":", 1)
		s = l.startSkiffAfter(t, setup, state, []string{named}, "--kill-switch")
		if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
			t.Errorf("%s by name through the tunnel with the kill switch: %v %s", named, err, out)
		}
		s.stop(t)
		if strings.Contains(s.p.Output(), "cannot resolve a server now") {
			t.Errorf("skiff could not resolve %s through the stub's upstream:\n%s", serverName, s.p.Output())
		}
	}
	s = l.startSkiff(t, state, []string{px.hy2.link})
	s.stop(t)
}

// TestSkiffRunTUNUnresolvableServer starts TUN mode with a first server
// whose name does not resolve and a second named by address: the start
// succeeds and traffic goes through the second.
func TestSkiffRunTUNUnresolvableServer(t *testing.T) {
	l := newLab(t)
	harness.NeedSkiff(t)
	l.useResolver(t)
	px := l.startProxies(t)
	bad := strings.Replace(px.hy2.link, srvAddr4+":", "no-such-server.invalid:", 1)
	s := l.startSkiff(t, t.TempDir(), []string{bad, px.vlessWS.link})
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Errorf("through the second server: %v %s", err, out)
	}
	s.stop(t)
	if !strings.Contains(s.p.Output(), "cannot resolve a server now") {
		t.Error("skiff's log does not say the first server's name did not resolve")
	}
}

// TestSkiffRunTUNNoIPv6 runs with --tun-ipv6=false on a client that has
// global IPv6 (address and default route): the tunnel carries no IPv6, and
// an app's IPv6 connection is refused without a packet on the uplink.
func TestSkiffRunTUNNoIPv6(t *testing.T) {
	l, px, leak := newLeakLab(t)
	s := l.startSkiff(t, t.TempDir(), []string{px.hy2.link}, "--tun-ipv6=false")
	leak.reset(t, px.hy2.proto, px.hy2.srv.Port)
	if out, err := l.client("tcp [" + echoAddr6 + "]:7001"); err == nil {
		t.Errorf("an IPv6 connection succeeded with no IPv6 in the tunnel: %s", out)
	}
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Errorf("IPv4 through the tunnel: %v %s", err, out)
	}
	got := leak.read(t)
	t.Logf("packets leaving the client namespace: %v", got)
	if got["target"] != 0 || got["other"] != 0 || got["dns"] != 0 {
		t.Errorf("IPv6 leaked outside the tunnel: %v", got)
	}
	s.stop(t)
}
