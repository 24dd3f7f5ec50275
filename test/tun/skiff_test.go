package tun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// The product's own runs: `skiff run --tun` in the client namespace, a
// sing-box server in the server namespace with one inbound per protocol,
// and the server namespace's DNS server naming the echo and HTTP servers
// (testName).

// proxy is one of the sing-box server's inbounds, as the client sees it.
type proxy struct {
	srv   *harness.Server
	proto string // "tcp" or "udp": what the client's packets to it are
	link  string // share link with the server namespace's address
}

// proxies is the sing-box server in the server namespace.
type proxies struct {
	hy2, vlessWS, vlessTCP proxy
	proc                   *harness.Process // sing-box
	restart                func(t *testing.T)
}

// startProxies starts sing-box in the server namespace with a Hysteria2, a
// VLESS+WS+TLS and a VLESS+TLS inbound; it resolves names with the server
// namespace's DNS server.
func (l *lab) startProxies(t *testing.T) *proxies {
	t.Helper()
	sb := harness.NeedSingBox(t)
	dir := t.TempDir()
	cert, err := harness.NewCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxies{
		hy2:      proxy{srv: &harness.Server{Kind: harness.Hysteria2, Port: 8443, Cert: cert, Password: "tun-e2e-hy2-pass"}, proto: "udp"},
		vlessWS:  proxy{srv: &harness.Server{Kind: harness.VLESSWS, Port: 8444, Cert: cert, UUID: "0f6b3a1e-2c4d-4e5f-8a9b-1c2d3e4f5a6b", Path: "/ws"}, proto: "tcp"},
		vlessTCP: proxy{srv: &harness.Server{Kind: harness.VLESSTCP, Port: 8445, Cert: cert, UUID: "7b2c0d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"}, proto: "tcp"},
	}
	var inbounds []any
	for _, x := range []*proxy{&p.hy2, &p.vlessWS, &p.vlessTCP} {
		raw, err := x.srv.ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		in := cfg["inbounds"].([]any)[0].(map[string]any)
		in["listen"] = "::"
		in["tag"] = string(x.srv.Kind)
		inbounds = append(inbounds, in)
		x.link = strings.Replace(x.srv.Link(x.srv.Trusting()), "127.0.0.1:", srvAddr4+":", 1)
	}
	cfg := map[string]any{
		"log":       map[string]any{"level": "info", "timestamp": true},
		"dns":       map[string]any{"servers": []any{map[string]any{"type": "udp", "tag": "lab", "server": srvAddr4, "server_port": 53}}, "final": "lab"},
		"inbounds":  inbounds,
		"outbounds": []any{map[string]any{"type": "direct", "tag": "direct"}},
		"route":     map[string]any{"final": "direct", "default_domain_resolver": "lab"},
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "server.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T) {
		t.Helper()
		p.proc = harness.Start(t, "sing-box", "ip", "netns", "exec", l.srv, sb, "run", "--disable-color", "-c", path)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.proc.WaitText(ctx, "sing-box started"); err != nil {
			t.Fatal(err)
		}
	}
	start(t)
	// restart stops sing-box and starts it again: every connection's
	// state on the server is gone.
	p.restart = func(t *testing.T) { p.proc.Stop(); start(t) }
	for _, port := range []int{p.vlessWS.srv.Port, p.vlessTCP.srv.Port} {
		if out, err := l.client(fmt.Sprintf("wait %s:%d", srvAddr4, port)); err != nil {
			t.Fatalf("sing-box does not listen on %d: %v %s", port, err, out)
		}
	}
	return p
}

// useResolver points the client namespace's resolv.conf at the server
// namespace's DNS server: without the TUN's DNS hijack, a query would go
// there (over the veth), which the leak test would count.
func (l *lab) useResolver(t *testing.T) {
	t.Helper()
	dir := filepath.Join("/etc/netns", l.cli)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := "nameserver " + srvAddr4 + "\noptions timeout:2 attempts:1\n"
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// Names come from DNS alone: an empty hosts file, and no other source.
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("127.0.0.1 localhost\n::1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nsswitch.conf"), []byte("hosts: files dns\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skiffRun is `skiff run --tun` in the client namespace.
type skiffRun struct {
	p     *harness.Process
	state string // its state file (for skiff cleanup)
}

// startSkiff runs `skiff run --tun` with links in the client namespace and
// waits for the TUN to be up. Its state file is stateDir/tun-state.json:
// stateDir is bind-mounted on /run/skiff in the process's own mount
// namespace (ip netns exec makes one), so that runs in parallel namespaces
// do not share the machine's state file.
func (l *lab) startSkiff(t *testing.T, stateDir string, links []string, extra ...string) *skiffRun {
	t.Helper()
	return l.startSkiffAfter(t, "true", stateDir, links, extra...)
}

// startSkiffAfter is startSkiff with setup, a shell command run first in
// skiff's own mount namespace.
func (l *lab) startSkiffAfter(t *testing.T, setup, stateDir string, links []string, extra ...string) *skiffRun {
	t.Helper()
	bin := harness.NeedSkiff(t)
	if err := os.MkdirAll("/run/skiff", 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"netns", "exec", l.cli, "sh", "-c", setup + ` && mount --bind "$1" /run/skiff && shift && exec "$@"`, "sh", stateDir,
		bin, "run", "--tun"}
	for _, link := range links {
		args = append(args, "--link", link)
	}
	p := harness.Start(t, "skiff", "ip", append(args, extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "skiff: TUN "); err != nil {
		t.Fatalf("skiff run --tun did not come up: %v", err)
	}
	return &skiffRun{p: p, state: filepath.Join(stateDir, "tun-state.json")}
}

// stop ends skiff with SIGTERM and checks that it exited cleanly.
func (s *skiffRun) stop(t *testing.T) {
	t.Helper()
	s.p.Stop()
	if st := s.p.ExitStatus(); st != "exit status 0" {
		t.Errorf("skiff run --tun ended with %s", st)
	}
}

// curl runs curl with args in the client namespace (no proxy variables).
func (l *lab) curl(args ...string) (string, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", l.cli, "curl", "-sS", "--max-time", "10", "--noproxy", "*"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func needCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl (make deps installs it)")
	}
}

// newLeakLab is the set-up of the leak tests: a lab whose client namespace
// resolves with the server namespace's DNS server, the sing-box server, and
// the leak counters on the client's veth.
func newLeakLab(t *testing.T) (*lab, *proxies, *leakCounter) {
	t.Helper()
	l, px := newResolvingLab(t)
	return l, px, l.newLeakCounter(t)
}

// newResolvingLab is a lab whose client namespace resolves with the server
// namespace's DNS server, with the sing-box server, for skiff and curl.
func newResolvingLab(t *testing.T) (*lab, *proxies) {
	t.Helper()
	l := newLab(t)
	needCurl(t)
	harness.NeedSkiff(t)
	l.useResolver(t)
	return l, l.startProxies(t)
}

// TestSkiffRunTUN runs the product as a user would: `skiff run --tun` with
// each protocol's link to sing-box. Apps in the client namespace reach the
// HTTP, TCP echo and UDP echo servers, by name and by IPv4 and IPv6
// address, through the TUN, the engine and the outbound (whose socket
// bypasses the TUN by its fwmark). Meanwhile nftables counts what leaves
// the client namespace: only packets to the proxy server's address and
// port may. After SIGTERM the routes and rules are the original ones.
func TestSkiffRunTUN(t *testing.T) {
	l, px, leak := newLeakLab(t)

	// The counters see a leak when there is one: before skiff runs, the
	// name is resolved and fetched directly.
	if out, err := l.curl("http://" + testName + "/direct"); err != nil || !strings.HasPrefix(out, httpMarker) {
		t.Fatalf("direct fetch of %s before skiff runs: %v %s", testName, err, out)
	}
	if c := leak.read(t); c["dns"] == 0 || c["target"] == 0 {
		t.Fatalf("the leak counters did not see a direct DNS query and fetch: %v", c)
	}

	for _, tc := range []struct {
		name string
		p    proxy
	}{
		{"hysteria2", px.hy2},
		{"vless-ws-tls", px.vlessWS},
		{"vless-tls", px.vlessTCP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := l.routing()
			s := l.startSkiff(t, t.TempDir(), []string{tc.p.link}, "--log-level", "debug")
			leak.reset(t, tc.p.proto, tc.p.srv.Port)

			for _, c := range [][]string{
				{"-4", "http://" + testName + "/v4"},
				{"-6", "http://" + testName + "/v6"},
				{"http://" + echoAddr4 + "/raw4"},
				{"-g", "http://[" + echoAddr6 + "]/raw6"},
			} {
				out, err := l.curl(c...)
				if err != nil || !strings.HasPrefix(out, httpMarker) {
					t.Errorf("curl %s: %v %s", strings.Join(c, " "), err, out)
				}
			}
			for _, c := range []string{
				"tcp " + testName + ":7001",
				"tcp " + echoAddr4 + ":7001",
				"tcp [" + echoAddr6 + "]:7001",
				"udp " + testName + ":7003",
				"udp " + echoAddr4 + ":7003",
				"udp [" + echoAddr6 + "]:7003",
			} {
				out, err := l.client(c)
				if err != nil || !strings.HasPrefix(out, "ok") {
					t.Errorf("%s: %v %s", c, err, out)
				}
			}

			got := leak.read(t)
			t.Logf("packets leaving the client namespace: %v", got)
			if got["proxy"] == 0 {
				t.Errorf("no packet to the proxy server %s/%d: the counters or the traffic are broken", tc.p.proto, tc.p.srv.Port)
			}
			for _, k := range []struct{ class, what string }{
				{"dns", "DNS queries (port 53): the hijack missed them"},
				{"target", "packets to the echo/HTTP servers: flows went around the TUN"},
				{"fake", "packets to fake-IP addresses: flows to names went around the TUN"},
				{"other", "other packets"},
			} {
				if got[k.class] != 0 {
					t.Errorf("left the client namespace: %d %s", got[k.class], k.what)
				}
			}
			s.stop(t)
			log := s.p.Output()
			for _, dst := range []string{testName + ":80", testName + ":7001", testName + ":7003", echoAddr4 + ":7001", "[" + echoAddr6 + "]:7003"} {
				if !strings.Contains(log, "dst="+dst) {
					t.Errorf("skiff's log shows no flow to %s: the traffic went around the engine", dst)
				}
			}
			if after := l.routing(); after != before {
				t.Errorf("routing differs after skiff run stopped\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestSkiffRunTUNRealIP runs `skiff run --tun --tun-dns real-ip`: apps get
// the names' real addresses, resolved by the DNS server asked through the
// proxy (the server namespace's, named by --tun-dns-upstream), and reach
// them through the TUN. As in fake-IP mode, no DNS query and no packet to
// the target leaves the client namespace outside the tunnel.
func TestSkiffRunTUNRealIP(t *testing.T) {
	l, px, leak := newLeakLab(t)

	for _, tc := range []struct {
		name, upstream string
		p              proxy
	}{
		{"hysteria2", "udp://" + srvAddr4, px.hy2},
		{"vless-ws-tls", srvAddr4 + ":53", px.vlessWS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := l.routing()
			s := l.startSkiff(t, t.TempDir(), []string{tc.p.link}, "--log-level", "debug",
				"--tun-dns", "real-ip", "--tun-dns-upstream", tc.upstream)
			leak.reset(t, tc.p.proto, tc.p.srv.Port)

			out, err := l.client("resolve " + testName)
			if err != nil || !strings.HasPrefix(out, "ok") {
				t.Fatalf("resolve %s: %v %s", testName, err, out)
			}
			if !strings.Contains(out, echoAddr4) || !strings.Contains(out, echoAddr6) || strings.Contains(out, "198.18.") {
				t.Errorf("resolve %s in real-ip mode = %q, want its real addresses %s and %s", testName, out, echoAddr4, echoAddr6)
			}
			for _, c := range [][]string{
				{"-4", "http://" + testName + "/v4"},
				{"-6", "http://" + testName + "/v6"},
			} {
				out, err := l.curl(c...)
				if err != nil || !strings.HasPrefix(out, httpMarker) {
					t.Errorf("curl %s: %v %s", strings.Join(c, " "), err, out)
				}
			}
			if out, err := l.client("udp " + testName + ":7003"); err != nil || !strings.HasPrefix(out, "ok") {
				t.Errorf("udp %s:7003: %v %s", testName, err, out)
			}

			got := leak.read(t)
			t.Logf("packets leaving the client namespace: %v", got)
			if got["proxy"] == 0 {
				t.Errorf("no packet to the proxy server %s/%d", tc.p.proto, tc.p.srv.Port)
			}
			for _, class := range []string{"dns", "target", "fake", "other"} {
				if got[class] != 0 {
					t.Errorf("left the client namespace outside the tunnel: %d packets of class %s", got[class], class)
				}
			}
			s.stop(t)
			if log := s.p.Output(); !strings.Contains(log, "dst="+echoAddr4+":80") {
				t.Errorf("skiff's log shows no flow to %s:80: the traffic went around the engine", echoAddr4)
			}
			if after := l.routing(); after != before {
				t.Errorf("routing differs after skiff run stopped\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestSkiffRunTUNKill9 kills `skiff run --tun` with SIGKILL: `skiff
// cleanup` restores the routes and rules; after a second kill, the next
// start cleans up by itself, carries traffic, and restores them on stop.
func TestSkiffRunTUNKill9(t *testing.T) {
	l := newLab(t)
	skiff := harness.NeedSkiff(t)
	px := l.startProxies(t)
	state := t.TempDir()
	before := l.routing()

	s := l.startSkiff(t, state, []string{px.hy2.link})
	s.p.Kill()
	if l.routing() == before {
		t.Fatal("routing equals the original after kill -9: nothing was installed, the test proves nothing")
	}
	out, err := exec.Command("ip", "netns", "exec", l.cli, skiff, "cleanup", "--state", s.state).CombinedOutput()
	if err != nil {
		t.Fatalf("skiff cleanup: %v\n%s", err, out)
	}
	if after := l.routing(); after != before {
		t.Errorf("routing differs after kill -9 and skiff cleanup\nbefore:\n%s\nafter:\n%s", before, after)
	}

	s = l.startSkiff(t, state, []string{px.hy2.link})
	s.p.Kill()
	s = l.startSkiff(t, state, []string{px.hy2.link})
	if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil || !strings.HasPrefix(out, "ok") {
		t.Errorf("skiff started over a killed one's leftovers does not carry traffic: %v %s", err, out)
	}
	s.stop(t)
	if after := l.routing(); after != before {
		t.Errorf("routing differs after kill -9, a new start and SIGTERM\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestSkiffRunTUNManyConnections holds 500 TCP connections open at once
// through `skiff run --tun` and each proxy protocol, and reports skiff's
// resident memory (peak and idle), Go heap and goroutines: once the
// connections close, the goroutines and the heap fall back.
func TestSkiffRunTUNManyConnections(t *testing.T) {
	l := newLab(t)
	harness.NeedSkiff(t)
	needCurl(t)
	px := l.startProxies(t)
	const pprofAddr = "127.0.0.1:6061"
	for _, tc := range []struct {
		name string
		p    proxy
	}{
		{"hysteria2", px.hy2},
		{"vless-ws-tls", px.vlessWS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := l.startSkiff(t, t.TempDir(), []string{tc.p.link}, "--pprof", pprofAddr)
			pid := s.p.Pid()
			base, baseRT := procMem(t, pid), l.runtimeStats(t, pprofAddr)
			const n = 500
			c := l.start(helperEnv+"=client", fmt.Sprintf("SKIFF_TUN_ARGS=many %s:7001 %d", echoAddr4, n))
			res := c.line(t, 60*time.Second)
			open, openRT := procMem(t, pid), l.runtimeStats(t, pprofAddr)
			c.send("")
			c.cmd.Wait()
			if res != fmt.Sprintf("many %d ok 0 failed", n) {
				t.Fatalf("%d concurrent connections through skiff --tun and %s: %q", n, tc.name, res)
			}
			// The kernel's default queue of 500 drops packets bound
			// for skiff when hundreds of connections send at once, and
			// each drop costs a retransmission time-out.
			if link := run(t, "ip", "-n", l.cli, "-s", "link", "show", "skiff0"); !strings.Contains(link, "qlen 10000") {
				t.Errorf("skiff0's transmit queue is not 10000 packets:\n%s", link)
			} else {
				t.Logf("skiff0 after %d connections:\n%s", n, link)
			}
			if openRT.goroutines < baseRT.goroutines+n {
				t.Errorf("%d goroutines with %d connections open, %d before: the connections did not go through skiff", openRT.goroutines, n, baseRT.goroutines)
			}
			// The flows end as the closes travel through the tunnel and
			// the server; wait for their goroutines to go.
			idleRT := l.runtimeStats(t, pprofAddr)
			for deadline := time.Now().Add(15 * time.Second); idleRT.goroutines > baseRT.goroutines+n/10 && time.Now().Before(deadline); {
				time.Sleep(500 * time.Millisecond)
				idleRT = l.runtimeStats(t, pprofAddr)
			}
			// The runtime returns freed memory to the OS in the
			// background after a GC (runtimeStats forced one).
			time.Sleep(5 * time.Second)
			idle := procMem(t, pid)
			t.Logf("%d connections through skiff --tun and %s: RSS before %.1f MiB, all open %.1f MiB, peak (VmHWM) %.1f MiB, idle 5 s after close %.1f MiB; "+
				"live Go heap %.1f / %.1f / %.1f MiB, goroutines %d / %d / %d (before / open / after close)",
				n, tc.name, mib(base.rss), mib(open.rss), mib(idle.hwm), mib(idle.rss),
				float64(baseRT.heapAlloc)/(1<<20), float64(openRT.heapAlloc)/(1<<20), float64(idleRT.heapAlloc)/(1<<20),
				baseRT.goroutines, openRT.goroutines, idleRT.goroutines)
			if idleRT.goroutines > baseRT.goroutines+n/10 {
				t.Errorf("%d goroutines 15 s after the %d connections closed, %d before: flows leak", idleRT.goroutines, n, baseRT.goroutines)
			}
			// Sanity bounds, not a budget: after close the live heap is
			// within 32 MiB of where it started (64 KiB a connection
			// kept would exceed it), and the peak stays far below what a
			// leak of every connection's buffers would hold.
			if idleRT.heapAlloc > baseRT.heapAlloc+32<<20 {
				t.Errorf("live Go heap %d B after close, %d B before and %d B with all open: it did not fall back", idleRT.heapAlloc, baseRT.heapAlloc, openRT.heapAlloc)
			}
			if idle.hwm > 512<<10 {
				t.Errorf("peak RSS %d KiB for %d connections", idle.hwm, n)
			}
			if out, err := l.client("tcp " + echoAddr4 + ":7001"); err != nil {
				t.Errorf("a connection after the %d closed: %v %s", n, err, out)
			}
			s.stop(t)
		})
	}
}

// goRuntime is what skiff's pprof endpoint says about its Go runtime.
type goRuntime struct {
	heapAlloc  int64 // bytes of live objects, after a forced GC
	goroutines int
}

// runtimeStats forces a GC in skiff (through its pprof endpoint at addr in
// the client namespace) and reads its heap in use and goroutine count.
func (l *lab) runtimeStats(t *testing.T, addr string) goRuntime {
	t.Helper()
	var r goRuntime
	heap, err := l.curl("http://" + addr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		t.Fatalf("pprof heap: %v %s", err, heap)
	}
	for _, line := range strings.Split(heap, "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			r.heapAlloc, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	gr, err := l.curl("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatalf("pprof goroutine: %v", err)
	}
	if _, err := fmt.Sscanf(gr, "goroutine profile: total %d", &r.goroutines); err != nil || r.heapAlloc == 0 {
		t.Fatalf("pprof: no heap or goroutine figures (%v)", err)
	}
	return r
}

type memInfo struct{ rss, hwm int } // KiB

// procMem reads VmRSS and VmHWM of process pid.
func procMem(t *testing.T, pid int) memInfo {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var m memInfo
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			m.rss = v
		case "VmHWM:":
			m.hwm = v
		}
	}
	return m
}

func mib(kib int) float64 { return float64(kib) / 1024 }

// leakCounter is an nftables table in the client namespace that counts
// the packets leaving by its veth, by class: to the proxy server's address
// and port, DNS, to the echo/HTTP servers (the apps' target), to a fake-IP
// address (an app's flow to a name that went around the TUN), link-local
// control (neighbour discovery, MLD; ARP is not in the inet family), and
// anything else.
type leakCounter struct {
	l    *lab
	veth string
}

const leakTable = "skiffleak"

func (l *lab) newLeakCounter(t *testing.T) *leakCounter {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft (nftables)")
	}
	lc := &leakCounter{l: l, veth: strings.Replace(l.cli, "tuntest-c", "vc", 1)}
	t.Cleanup(func() { exec.Command("ip", "netns", "exec", l.cli, "nft", "delete", "table", "inet", leakTable).Run() })
	lc.load(t, "tcp", 1) // no proxy yet: any port would do
	return lc
}

// load (re)creates the table with the proxy server at proto/port, the
// counters at zero.
func (lc *leakCounter) load(t *testing.T, proto string, port int) {
	t.Helper()
	rules := fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	counter proxy {}
	counter dns {}
	counter target {}
	counter fake {}
	counter control {}
	counter other {}
	chain out {
		type filter hook postrouting priority 0; policy accept;
		oifname != "%[2]s" accept
		ip daddr %[3]s %[4]s dport %[5]d counter name proxy accept
		udp dport 53 counter name dns accept
		tcp dport 53 counter name dns accept
		ip daddr %[6]s counter name target accept
		ip6 daddr %[7]s counter name target accept
		ip daddr 198.18.0.0/15 counter name fake accept
		ip6 daddr fdfe:dcba:9876:18::/64 counter name fake accept
		icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 counter name control accept
		ip6 daddr ff02::/16 icmpv6 type { mld-listener-report, mld2-listener-report } counter name control accept
		counter name other
	}
}
`, leakTable, lc.veth, srvAddr4, proto, port, echoAddr4, echoAddr6)
	cmd := exec.Command("ip", "netns", "exec", lc.l.cli, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v\n%s\n%s", err, out, rules)
	}
}

// reset starts counting afresh with the proxy server at proto/port.
func (lc *leakCounter) reset(t *testing.T, proto string, port int) { lc.load(t, proto, port) }

// read returns the packet count of each class.
func (lc *leakCounter) read(t *testing.T) map[string]int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", lc.l.cli, "nft", "-j", "list", "counters", "table", "inet", leakTable).Output()
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
	if len(got) != 6 {
		t.Fatalf("nft counters: %s", out)
	}
	return got
}
