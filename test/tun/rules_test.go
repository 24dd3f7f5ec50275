package tun_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/test/harness"
)

// Routing by rule sets through the product: `skiff run --tun --node` with
// a saved profile whose routes are the "bypass mainland China" preset,
// its rule sets served by a local HTTP server (the test's own .srs files,
// compiled by sing-box), plus a process rule. The sinks in the server
// namespace answer with the address each connection came from: the
// client namespace's own address for a direct connection, the server
// namespace's for one that sing-box made.

// Sink addresses in the server namespace: one the test's geoip-cn lists,
// one it does not.
const (
	sinkCN    = "198.51.100.10"
	sinkOther = "198.51.100.11"
	whoPort   = "8080"
)

// serveWhoami is the "whoami" helper: an HTTP server on each address of
// args[1:] that answers /who with the client's address and serves the
// files of args[0] otherwise.
func serveWhoami(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("whoami: want DIR ADDR…")
	}
	files := http.FileServer(http.Dir(args[0]))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/who" {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			fmt.Fprintln(w, host)
			return
		}
		files.ServeHTTP(w, r)
	})
	for _, a := range args[1:] {
		ln, err := listenTCP(a)
		if err != nil {
			return err
		}
		go http.Serve(ln, h)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// newSinkLab is a lab with its proxies, the test's resolver and the two
// sink addresses on the server namespace's loopback.
func newSinkLab(t *testing.T) (*lab, *proxies) {
	t.Helper()
	l, px := newResolvingLab(t)
	for _, a := range []string{sinkCN, sinkOther} {
		run(t, "ip", "-n", l.srv, "addr", "add", a+"/32", "dev", "lo")
	}
	return l, px
}

// startWhoami starts serveWhoami in the server namespace on whoPort of
// each address, serving the files of dir, until the test ends.
func (l *lab) startWhoami(t *testing.T, dir string, addrs ...string) {
	t.Helper()
	args := dir
	for _, a := range addrs {
		args += " " + a + ":" + whoPort
	}
	who := exec.Command("ip", "netns", "exec", l.srv, os.Args[0], "-test.run=^$")
	who.Env = append(os.Environ(), helperEnv+"=whoami", "SKIFF_TUN_ARGS="+args)
	stdin, _ := who.StdinPipe()
	stdout, _ := who.StdoutPipe()
	who.Stderr = os.Stderr
	if err := who.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); who.Wait() })
	if b := make([]byte, 6); func() bool { n, _ := io.ReadFull(stdout, b); return n != 6 }() {
		t.Fatal("whoami helper did not start")
	}
}

// who fetches /who from hostport in the client namespace with curl (or
// the given program) while s runs, and returns the address the sink saw
// (cliAddr4 for a direct connection) and the one curl connected to.
func (l *lab) who(t *testing.T, s *skiffRun, prog, hostport string) (seen, connected string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", l.cli, prog, "-sS", "--max-time", "10", "--noproxy", "*", "-w", " %{remote_ip}", "http://"+hostport+"/who")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s http://%s/who: %v %s\nskiff:\n%s", filepath.Base(prog), hostport, err, out, s.p.Output())
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Fatalf("%s: answer %q", hostport, out)
	}
	return f[0], f[1]
}

// compileSet has sing-box compile a source rule set to .srs in dir.
func compileSet(t *testing.T, dir, name string, rules []map[string]any) {
	t.Helper()
	src, err := json.Marshal(map[string]any{"version": 3, "rules": rules})
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, name+".json")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(harness.NeedSingBox(t), "rule-set", "compile", "--output", filepath.Join(dir, name+".srs"), in).CombinedOutput(); err != nil {
		t.Fatalf("sing-box rule-set compile: %v\n%s", err, out)
	}
}

func TestSkiffRunTUNRuleSets(t *testing.T) {
	l, px := newSinkLab(t)

	// The test's "mainland China": one sink address, and the test name
	// (which the server namespace's DNS server answers with echoAddr4).
	sets := t.TempDir()
	compileSet(t, sets, "geoip-cn", []map[string]any{{"ip_cidr": []string{sinkCN + "/32", "100.64.99.0/24"}}})
	compileSet(t, sets, "geosite-cn", []map[string]any{{"domain_suffix": []string{testName, "cn.example"}}})
	l.startWhoami(t, sets, sinkCN, sinkOther, echoAddr4)

	// The profile: the preset, its rule sets fetched from the local
	// server instead of GitHub, and a process rule before it.
	n, err := link.Parse(px.vlessWS.link)
	if err != nil {
		t.Fatal(err)
	}
	n.Name = "lab"
	routes, err := preset.Routes(preset.BypassCN, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range routes.RuleSets {
		routes.RuleSets[i].URL = "http://" + echoAddr4 + ":" + whoPort + "/" + routes.RuleSets[i].Name + ".srs"
	}
	routes.Rules = append([]profile.Rule{{Type: "process", Values: []string{"curl-direct"}, Target: "direct"}}, routes.Rules...)
	cfgDir := t.TempDir()
	store, err := profile.Open(cfgDir)
	if err != nil {
		t.Fatal(err)
	}
	p := profile.New()
	p.Nodes = []*profile.Node{{ID: "nlab", Config: *n}}
	p.Routes = routes
	if err := store.Save(p); err != nil {
		t.Fatal(err)
	}

	s := l.startSkiff(t, t.TempDir(), nil, "--node", "lab", "--config-dir", cfgDir, "--log-level", "debug")
	defer s.stop(t)
	// Every failure is said again after the processes' logs, which a CI
	// report may show only the end of.
	var failures []string
	t.Cleanup(func() {
		if len(failures) > 0 {
			t.Logf("TestSkiffRunTUNRuleSets failed:\n%s", strings.Join(failures, "\n"))
		}
	})
	errorf := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		failures = append(failures, msg)
		t.Error(msg)
	}
	// flowLog returns skiff's debug lines of the flows to hostport (each
	// written when its flow closes: wait a moment for the last).
	flowLog := func(hostport string, want int) string {
		var lines []string
		for end := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			lines = lines[:0]
			for _, ln := range strings.Split(s.p.Output(), "\n") {
				if strings.Contains(ln, "dst="+hostport) {
					lines = append(lines, ln)
				}
			}
			if len(lines) >= want || time.Now().After(end) {
				return strings.Join(lines, "\n")
			}
		}
	}

	whoFrom := func(prog, hostport string) (seen, connected string) {
		t.Helper()
		return l.who(t, s, prog, hostport)
	}
	direct := func(seen string) bool { return seen == cliAddr4 }

	if seen, _ := whoFrom("curl", sinkCN+":"+whoPort); !direct(seen) {
		errorf("%s (in geoip-cn) was reached from %s, want directly from %s", sinkCN, seen, cliAddr4)
	}
	if seen, _ := whoFrom("curl", sinkOther+":"+whoPort); direct(seen) {
		errorf("%s (not in the rule sets) was reached directly, want through sing-box", sinkOther)
	}
	// A name in geosite-cn: resolved by the direct resolver (the real
	// address, not a fake one) and fetched directly.
	seen, ip := whoFrom("curl", testName+":"+whoPort)
	if ip != echoAddr4 || !direct(seen) {
		errorf("%s: connected to %s, seen from %s; want %s directly", testName, ip, seen, echoAddr4)
	}
	// The process rule: the same request from a program named
	// curl-direct goes direct; curl's goes through the proxy.
	bin, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "curl-direct")
	run(t, "cp", bin, prog)
	if seen, _ := whoFrom(prog, sinkOther+":"+whoPort); !direct(seen) {
		errorf("curl-direct to %s was reached from %s, want directly (process rule); skiff's flows to it:\n%s", sinkOther, seen, flowLog(sinkOther+":"+whoPort, 2))
	}
	if seen, _ := whoFrom("curl", sinkOther+":"+whoPort); direct(seen) {
		errorf("curl to %s after curl-direct went direct, want through sing-box", sinkOther)
	}

	// The rule sets came from the local server, and are in the cache for
	// the next run.
	cached, _ := filepath.Glob(filepath.Join(cfgDir, "rulesets", "ruleset-*.cache"))
	if len(cached) != 2 {
		errorf("%d rule sets cached, want 2", len(cached))
	}
}
