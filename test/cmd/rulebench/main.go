// Command rulebench measures routing with the "bypass mainland China"
// rule sets at the sizes real lists have (geosite-cn about 110,000
// domains, geoip-cn about 10,000 prefixes), generated here and compiled
// to .srs by sing-box:
//
//   - Skiff's load time of each .srs and its matching cost per flow
//     (in process, testing.Benchmark);
//   - the resident memory of `skiff run` (the cgo-free core) with the
//     bypass-CN preset's rule sets loaded, and without, next to sing-box
//     loading the same .srs files, and without; each started -runs times,
//     medians reported;
//   - with -throughput D: 16 streams (-streams) downloading through each
//     client's SOCKS5 to a sing-box server (-proto, Shadowsocks 2022 by
//     default) for D, -runs times, interleaved, with the CN sets and
//     without: Mbps and the client's Mbps per core, medians. With the
//     sets, the rules check both sets before the flow goes to the proxy
//     (the sink's address is in neither), as a foreign site's flow does.
//
// It is a benchmark (make bench-rules), not a test: nothing asserts.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

func main() {
	var (
		domains = flag.Int("domains", 110_000, "domains in the generated geosite-cn (4% exact names, the rest suffixes)")
		v4      = flag.Int("v4", 8_500, "IPv4 prefixes in the generated geoip-cn")
		v6      = flag.Int("v6", 1_500, "IPv6 prefixes in the generated geoip-cn")
		runs    = flag.Int("runs", 5, "process starts per configuration for RSS")
		settle  = flag.Duration("settle", 3*time.Second, "wait after a process is ready before reading its RSS")
		tput    = flag.Duration("throughput", 0, "measure 16-stream throughput for this long per run (0: not at all)")
		streams = flag.Int("streams", 16, "concurrent streams of the throughput runs")
		proto   = flag.String("proto", "ss2022", "the server protocol of the throughput runs (as make bench names them)")
		noRSS   = flag.Bool("no-rss", false, "skip the RSS starts (with -throughput: only the throughput runs)")
	)
	flag.Parse()
	log.SetFlags(0)
	dir, err := os.MkdirTemp("", "rulebench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sb, err := harness.SingBoxBinary()
	if err != nil {
		log.Fatal(err)
	}
	skiff, err := harness.SkiffCoreBinary()
	if err != nil {
		log.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(16, 1))
	names := genDomains(rng, *domains)
	nExact := *domains / 25
	site := map[string]any{"version": 3, "rules": []any{map[string]any{"domain": names[:nExact], "domain_suffix": names[nExact:]}}}
	prefixes := genPrefixes(rng, *v4, *v6)
	ip := map[string]any{"version": 3, "rules": []any{map[string]any{"ip_cidr": prefixes}}}
	sitePath := compile(sb, dir, "geosite-cn", site)
	ipPath := compile(sb, dir, "geoip-cn", ip)
	siteSRS, _ := os.ReadFile(sitePath)
	ipSRS, _ := os.ReadFile(ipPath)
	fmt.Printf("geosite-cn: %d domains, %d KiB .srs; geoip-cn: %d prefixes, %d KiB .srs\n", *domains, len(siteSRS)>>10, len(prefixes), len(ipSRS)>>10)

	// Load time and tables, in process.
	var siteSet, ipSet *ruleset.Set
	loadSite := medianDur(5, func() { siteSet = must(ruleset.ParseSRS(siteSRS)) })
	loadIP := medianDur(5, func() { ipSet = must(ruleset.ParseSRS(ipSRS)) })
	fmt.Printf("skiff load (median of 5): geosite-cn %v, geoip-cn %v; tables %d KiB + %d KiB\n",
		loadSite.Round(time.Millisecond), loadIP.Round(time.Millisecond), siteSet.Stats().Bytes>>10, ipSet.Stats().Bytes>>10)

	// Matching per flow: the preset's rules over both sets.
	routes := must(preset.Routes(preset.BypassCN, ""))
	var rules []rule.Rule
	for _, r := range routes.Rules {
		x := rule.Rule{Target: r.Target, Private: r.Type == "private"}
		if r.Type == "rule_set" {
			x.RuleSet = r.Values
		}
		rules = append(rules, x)
	}
	set := must(rule.CompileWith(rules, "proxy", rule.Env{Sets: map[string]*ruleset.Set{"geosite-cn": siteSet, "geoip-cn": ipSet}}))
	flows := sampleFlows(rng, names, prefixes)
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			m := flows[i%len(flows)]
			set.Match(&m)
		}
	})
	direct := 0
	for i := range flows {
		m := flows[i]
		if set.Match(&m) == "direct" {
			direct++
		}
	}
	fmt.Printf("skiff match per flow: %d ns, %d allocs (%d sample flows: names in and out of geosite-cn, addresses in and out of geoip-cn; %d go direct)\n",
		res.NsPerOp(), res.AllocsPerOp(), len(flows), direct)

	srv := serveDir(dir)
	defer srv.Close()
	if *tput > 0 {
		if err := throughput(dir, srv.Addr().String(), sitePath, ipPath, skiff, sb, *proto, *streams, *runs, *tput); err != nil {
			log.Fatal(err)
		}
	}
	if *noRSS {
		return
	}

	// RSS of whole processes.
	skiffRSS := func(withSets bool) (int, time.Duration) {
		cfg := skiffProfile(dir, srv.Addr().String(), withSets)
		return runRSS(*settle, "skiff: listening", skiff, "run", "--node", "bench", "--config-dir", cfg, "--listen", freeAddr())
	}
	sbRSS := func(withSets bool) (int, time.Duration) {
		return runRSS(*settle, "sing-box started", sb, "run", "--disable-color", "-c", singBoxConfig(dir, sitePath, ipPath, withSets))
	}
	// Prime Skiff's cache: the first run downloads from the local server.
	skiffRSS(true)
	type row struct {
		name string
		f    func(bool) (int, time.Duration)
		sets bool
	}
	rows := []row{{"skiff, no rule sets", skiffRSS, false}, {"skiff, CN sets", skiffRSS, true}, {"sing-box, no rule sets", sbRSS, false}, {"sing-box, CN sets", sbRSS, true}}
	rss := make([][]int, len(rows))
	ready := make([][]time.Duration, len(rows))
	for range *runs { // interleaved, so that the machine's load hits all alike
		for i, r := range rows {
			k, d := r.f(r.sets)
			rss[i] = append(rss[i], k)
			ready[i] = append(ready[i], d)
		}
	}
	fmt.Printf("\nRSS %v after ready, medians of %d starts (load average %s):\n", *settle, *runs, loadavg())
	med := make([]float64, len(rows))
	for i, r := range rows {
		med[i] = float64(median(rss[i])) / 1024
		fmt.Printf("  %-24s %6.1f MiB   ready in %v   (runs: %v KiB)\n", r.name, med[i], median(ready[i]).Round(time.Millisecond), rss[i])
	}
	fmt.Printf("with the CN sets: skiff %.1f MiB = %.2fx sing-box's %.1f MiB (target <= 0.5x); the sets add %.1f MiB to skiff, %.1f MiB to sing-box\n",
		med[1], med[1]/med[3], med[3], med[1]-med[0], med[3]-med[2])
}

// throughput runs the 16-stream download through skiff and sing-box with
// the CN sets and without, runs times each, interleaved, and prints the
// medians.
func throughput(dir, lists, sitePath, ipPath, skiff, sb, proto string, streams, runs int, d time.Duration) error {
	cert, err := harness.NewCert(dir)
	if err != nil {
		return err
	}
	sink, err := harness.ServeTCP(harness.SinkSource)
	if err != nil {
		return err
	}
	defer sink.Close()
	s, server, err := measure.StartServer(proto, sb, dir, cert)
	if err != nil {
		return err
	}
	defer server.Stop()
	if s.Site != nil {
		defer s.Site.Close()
	}
	n := must(link.Parse(s.Link(s.Trusting())))
	type client struct {
		name  string
		start func() (*harness.Process, string, error)
	}
	skiffClient := func(withSets bool) func() (*harness.Process, string, error) {
		return func() (*harness.Process, string, error) {
			cfg := filepath.Join(dir, fmt.Sprintf("tput-skiff-%v", withSets))
			store := must(profile.Open(cfg))
			p := profile.New()
			p.Nodes = []*profile.Node{{ID: "nbench", Config: *n}}
			if withSets {
				for _, name := range []string{"geosite-cn", "geoip-cn"} {
					p.Routes.RuleSets = append(p.Routes.RuleSets, profile.RuleSet{Name: name, URL: "http://" + lists + "/" + name + ".srs", Format: ruleset.FormatSingBox})
				}
				p.Routes.Rules = []profile.Rule{{Type: "rule_set", Values: []string{"geosite-cn", "geoip-cn"}, Target: "direct"}}
			}
			if err := store.Save(p); err != nil {
				return nil, "", err
			}
			listen := freeAddr()
			pr, err := harness.StartProcess("skiff", skiff, "run", "--node", "nbench", "--config-dir", cfg, "--listen", listen)
			if err != nil {
				return nil, "", err
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := pr.WaitText(ctx, "skiff: listening"); err != nil {
				pr.Stop()
				return nil, "", fmt.Errorf("skiff: %w\n%s", err, pr.Output())
			}
			return pr, listen, nil
		}
	}
	sbClient := func(withSets bool) func() (*harness.Process, string, error) {
		return func() (*harness.Process, string, error) {
			out := s.ClientOutbound()
			out["tag"] = "proxy"
			route := map[string]any{"final": "proxy"}
			if withSets {
				route["rule_set"] = []any{
					map[string]any{"tag": "geosite-cn", "type": "local", "format": "binary", "path": sitePath},
					map[string]any{"tag": "geoip-cn", "type": "local", "format": "binary", "path": ipPath},
				}
				route["rules"] = []any{map[string]any{"rule_set": []string{"geosite-cn", "geoip-cn"}, "outbound": "direct"}}
			}
			listen := freeAddr()
			_, ps, _ := net.SplitHostPort(listen)
			pn, _ := strconv.Atoi(ps)
			cfg := map[string]any{
				"log":       map[string]any{"level": "info"},
				"inbounds":  []any{map[string]any{"type": "mixed", "listen": "127.0.0.1", "listen_port": pn}},
				"outbounds": []any{out, map[string]any{"type": "direct", "tag": "direct"}},
				"route":     route,
			}
			b, _ := json.Marshal(cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pr, err := harness.StartSingBox(ctx, sb, dir, fmt.Sprintf("client-%v", withSets), b)
			if err != nil {
				return nil, "", err
			}
			if err := harness.WaitTCP(ctx, listen); err != nil {
				pr.Stop()
				return nil, "", err
			}
			return pr, listen, nil
		}
	}
	clients := []client{
		{"skiff, no rule sets", skiffClient(false)}, {"skiff, CN sets", skiffClient(true)},
		{"sing-box, no rule sets", sbClient(false)}, {"sing-box, CN sets", sbClient(true)},
	}
	// Prime Skiff's cache of the sets.
	if p, _, err := clients[1].start(); err != nil {
		return err
	} else {
		p.Stop()
	}
	mbps := make([][]float64, len(clients))
	perCore := make([][]float64, len(clients))
	for run := range runs {
		for i, c := range clients {
			p, proxy, err := c.start()
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			load := measure.Load{
				Dial:      func(ctx context.Context) (net.Conn, error) { return harness.DialSOCKS(ctx, proxy, sink.Addr()) },
				Dir:       harness.SinkDownload,
				Streams:   streams,
				Duration:  2 * time.Second,
				ClientPid: p.Pid(),
				ServerPid: server.Pid(), // its CPU shows the flows went through it, not direct
			}
			_, err = load.Run() // warm-up
			var m measure.Sample
			if err == nil {
				load.Duration = d
				m, err = load.Run()
			}
			p.Stop()
			if err != nil {
				return fmt.Errorf("%s: %w\n%s", c.name, err, p.Output())
			}
			mbps[i] = append(mbps[i], m.Mbps)
			perCore[i] = append(perCore[i], m.Mbps/m.ClientCores)
			fmt.Fprintf(os.Stderr, "run %d %s: %.0f Mbps, client %.2f cores, %.0f Mbps/core, server %.2f cores\n", run+1, c.name, m.Mbps, m.ClientCores, m.Mbps/m.ClientCores, m.ServerCores)
		}
	}
	fmt.Printf("\n%d-stream download through %s, %v per run, medians of %d runs (load average %s):\n", streams, proto, d, runs, loadavg())
	for i, c := range clients {
		fmt.Printf("  %-24s %7.0f Mbps  %7.0f Mbps/core   (Mbps/core: %s)\n", c.name, measure.Median(mbps[i]), measure.Median(perCore[i]), fmtFloats(perCore[i]))
	}
	fmt.Printf("the CN sets change skiff's Mbps/core by %+.1f%%, sing-box's by %+.1f%%\n",
		100*(measure.Median(perCore[1])/measure.Median(perCore[0])-1), 100*(measure.Median(perCore[3])/measure.Median(perCore[2])-1))
	return nil
}

func fmtFloats(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(s, " ")
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

// genDomains returns n distinct domains shaped like geosite-cn's: one to
// three labels under .cn, .com.cn, .com, .net or .org.
func genDomains(rng *rand.Rand, n int) []string {
	tlds := []string{"cn", "com.cn", "com", "net", "org", "net.cn", "top"}
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for l := range 1 + rng.IntN(2) {
			if l > 0 {
				b.WriteByte('.')
			}
			for range 3 + rng.IntN(9) {
				b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(36)])
			}
		}
		d := b.String() + "." + tlds[rng.IntN(len(tlds))]
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// genPrefixes returns v4 IPv4 prefixes (/10 to /24) and v6 IPv6 ones (/28
// to /48), random, as geoip-cn's are many small allocations.
func genPrefixes(rng *rand.Rand, v4, v6 int) []string {
	var out []string
	for range v4 {
		first := byte(1 + rng.IntN(222))
		if first == 127 {
			first = 128 // no loopback, as in the real list: the throughput runs' sink is on 127.0.0.1
		}
		a := netip.AddrFrom4([4]byte{first, byte(rng.IntN(256)), byte(rng.IntN(256)), 0})
		out = append(out, netip.PrefixFrom(a, 10+rng.IntN(15)).Masked().String())
	}
	for range v6 {
		var b [16]byte
		b[0], b[1] = 0x24, byte(rng.IntN(256))
		for i := 2; i < 6; i++ {
			b[i] = byte(rng.IntN(256))
		}
		out = append(out, netip.PrefixFrom(netip.AddrFrom16(b), 28+rng.IntN(21)).Masked().String())
	}
	return out
}

// sampleFlows is a mix of what a machine connects to: half names (a third
// of them in the set, at its depth or below), half addresses.
func sampleFlows(rng *rand.Rand, names, prefixes []string) []flow.Metadata {
	var out []flow.Metadata
	for i := range 4096 {
		m := flow.Metadata{Network: flow.TCP, Source: netip.MustParseAddrPort("127.0.0.1:40000")}
		switch i % 6 {
		case 0:
			m.Destination = flow.Addr{Name: "www." + names[rng.IntN(len(names))], Port: 443}
		case 1:
			m.Destination = flow.Addr{Name: names[rng.IntN(len(names))], Port: 443}
		case 2:
			m.Destination = flow.Addr{Name: fmt.Sprintf("api%d.service-%d.example.com", rng.IntN(1000), rng.IntN(1000)), Port: 443}
		case 3:
			p := netip.MustParsePrefix(prefixes[rng.IntN(len(prefixes))])
			m.Destination = flow.Addr{IP: p.Addr(), Port: 443}
		default:
			var b [4]byte
			for j := range b {
				b[j] = byte(rng.IntN(256))
			}
			m.Destination = flow.Addr{IP: netip.AddrFrom4(b), Port: 443}
		}
		out = append(out, m)
	}
	return out
}

// compile writes src as JSON and has sing-box compile it; it returns the
// .srs path.
func compile(sb, dir, name string, src any) string {
	b, err := json.Marshal(src)
	if err != nil {
		log.Fatal(err)
	}
	in, out := filepath.Join(dir, name+".json"), filepath.Join(dir, name+".srs")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		log.Fatal(err)
	}
	if b, err := exec.Command(sb, "rule-set", "compile", "--output", out, in).CombinedOutput(); err != nil {
		log.Fatalf("sing-box rule-set compile: %v\n%s", err, b)
	}
	return out
}

func serveDir(dir string) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, http.FileServer(http.Dir(dir)))
	return ln
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// skiffProfile writes a profile with one server (never dialled) and the
// bypass-CN preset over the local server's files, or the everything
// preset; it returns its folder, the same one each time so that the cache
// carries over.
func skiffProfile(dir, addr string, withSets bool) string {
	cfg := filepath.Join(dir, "skiff-nosets")
	name := preset.Everything
	if withSets {
		cfg, name = filepath.Join(dir, "skiff-sets"), preset.BypassCN
	}
	store := must(profile.Open(cfg))
	n := must(link.Parse("vless://b831381d-6324-4d53-ad4f-8cda48b30811@127.0.0.1:9?type=tcp&security=none#bench"))
	p := profile.New()
	p.Nodes = []*profile.Node{{ID: "nbench", Config: *n}}
	p.Routes = must(preset.Routes(name, ""))
	for i := range p.Routes.RuleSets {
		p.Routes.RuleSets[i].URL = "http://" + addr + "/" + p.Routes.RuleSets[i].Name + ".srs"
	}
	if err := store.Save(p); err != nil {
		log.Fatal(err)
	}
	return cfg
}

// singBoxConfig writes a sing-box client config: a mixed inbound, direct
// outbound and, withSets, the two local .srs rule sets routed direct.
func singBoxConfig(dir, site, ip string, withSets bool) string {
	route := map[string]any{"final": "direct"}
	if withSets {
		route["rule_set"] = []any{
			map[string]any{"tag": "geosite-cn", "type": "local", "format": "binary", "path": site},
			map[string]any{"tag": "geoip-cn", "type": "local", "format": "binary", "path": ip},
		}
		route["rules"] = []any{map[string]any{"rule_set": []string{"geosite-cn", "geoip-cn"}, "outbound": "direct"}}
	}
	_, port, _ := net.SplitHostPort(freeAddr())
	pn, _ := strconv.Atoi(port)
	cfg := map[string]any{
		"log":       map[string]any{"level": "info"},
		"inbounds":  []any{map[string]any{"type": "mixed", "listen": "127.0.0.1", "listen_port": pn}},
		"outbounds": []any{map[string]any{"type": "direct", "tag": "direct"}},
		"route":     route,
	}
	path := filepath.Join(dir, fmt.Sprintf("sing-box-%v.json", withSets))
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

// runRSS starts bin, waits for ready in its output, then settle, and
// returns its VmRSS in KiB and how long it took to be ready.
func runRSS(settle time.Duration, ready, bin string, args ...string) (int, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	out, err := cmd.StderrPipe()
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	var took time.Duration
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), ready) {
			took = time.Since(t0)
			break
		}
	}
	if took == 0 {
		log.Fatalf("%s never said %q:\n%s", filepath.Base(bin), ready, strings.Join(lines, "\n"))
	}
	go func() {
		for sc.Scan() {
		}
	}()
	time.Sleep(settle)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			return must(strconv.Atoi(f[1])), took
		}
	}
	log.Fatal("no VmRSS")
	return 0, 0
}

func medianDur(n int, f func()) time.Duration {
	var d []time.Duration
	for range n {
		t0 := time.Now()
		f()
		d = append(d, time.Since(t0))
	}
	return median(d)
}

func median[T int | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
