// Command tunbench measures skiff in TUN mode against sing-box in TUN mode
// (tun inbound, gVisor stack), both as the client of the same sing-box
// server, in network namespaces made for the run: a client namespace where
// the client opens its TUN device with auto-route, and a server namespace
// with the sing-box server (Hysteria2, TUIC, AnyTLS, VLESS+WS+TLS,
// VLESS+REALITY, Shadowsocks 2022, Trojan, VMess: -protocols; make
// bench-tun runs them all) and a sink/source,
// joined by a veth pair. A load generator (this program, re-executed in the
// client namespace) connects to the sink's address, so the traffic goes
// through the client's TUN: 16 concurrent TCP streams, download and upload
// measured separately, N runs with the median. It reports throughput, the
// client's CPU efficiency (Mbps per core the client process used) and its
// peak RSS, with skiff/sing-box ratios. Then (-conns N, default 500; 0
// none) a fresh client carries N concurrent TCP connections to an echo
// server, each moving -conn-size bytes each way at once, held open and idle
// for -hold, closed and left idle for -idle-wait (measure.Conns); the
// client's RSS, and skiff's Go heap and goroutines, are read at each phase.
//
// Run it as root from test/: `go run ./tunbench` for the full pass (3 runs
// of 30 s per direction), `go run ./tunbench -quick` for a short one
// (5 s hold and idle wait); -cpuprofile PREFIX saves and
// summarises skiff's CPU profile of the first download, -diag adds skiff's
// Go heap figures. It is a benchmark, not part of CI. Every step has a
// time limit and the whole run stops after -timeout; the namespaces are
// removed when it ends, also on SIGINT/SIGTERM or an error. When the skiff
// binary has no `run --tun` yet, it says so and measures sing-box alone.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

// options are the command-line settings.
type options struct {
	measure.Settings
	ipv6     bool
	diag     bool
	timeout  time.Duration
	skiffVia string        // viaService or viaRun
	window   time.Duration // settle time of the window's idle RSS reading; 0 none
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "role" {
		if err := runRole(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintf(os.Stderr, "tunbench role %s: %v\n", os.Args[2], err)
			os.Exit(1)
		}
		return
	}
	var o options
	o.Register(flag.CommandLine, "short pass: 5 s per direction, 2 s warm-up, 1 run (unless set)",
		"write skiff's CPU profile of the first download (or -profile-upload) run to FILE-<protocol>.pprof (via skiff run --pprof) and print its top", 1)
	flag.BoolVar(&o.ipv6, "ipv6", false, "load the sink over IPv6 through the TUN (the server is still reached over IPv4)")
	flag.BoolVar(&o.diag, "diag", false, "print skiff's live heap during the first download and at each phase of the many-connection load (forces GCs in skiff)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "stop everything after this long")
	flag.StringVar(&o.skiffVia, "skiff-via", viaService, "how skiff runs: service (`skiff service`, connected through its socket by `skiff import` and `skiff connect --tun`: what users run) or run (`skiff run --tun`, needed for -cpuprofile and -diag)")
	flag.DurationVar(&o.window, "window", 15*time.Second, "with -skiff-via service: before each skiff run's warm-up, start the window (skiff-window) under Xvfb as a client of the service and read its RSS after this long; 0 skips it")
	flag.Parse()
	o.Resolve(flag.CommandLine)
	if o.skiffVia != viaService && o.skiffVia != viaRun {
		fmt.Fprintf(os.Stderr, "tunbench: -skiff-via %q: service or run\n", o.skiffVia)
		os.Exit(2)
	}
	if o.skiffVia == viaService && (o.CPUProfile != "" || o.diag) {
		fmt.Fprintln(os.Stderr, "tunbench: -cpuprofile and -diag read skiff's pprof endpoint, which only `skiff run --pprof` has: use -skiff-via run")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tunbench:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// bench is one run of the program: the binaries, the namespaces and the
// shared certificate.
type bench struct {
	o        options
	skiffBin string
	sbBin    string
	self     string
	dir      string
	cert     *harness.Cert
	topo     *topology
}

func run(ctx context.Context, o options) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (network namespaces and TUN devices)")
	}
	b := &bench{o: o}
	var err error
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	if b.skiffBin, err = harness.SkiffBinary(); err != nil {
		return err
	}
	if b.sbBin, err = harness.SingBoxBinary(); err != nil {
		return err
	}
	skiffTUN := skiffHasTUN(b.skiffBin)
	if !skiffTUN {
		var kept []string
		for _, c := range o.Clients {
			if c != "skiff" {
				kept = append(kept, c)
			}
		}
		if len(kept) != len(o.Clients) {
			fmt.Fprintln(os.Stderr, "tunbench: skiff's TUN mode is not available in this build (`skiff run -h` has no --tun): measuring sing-box only")
		}
		b.o.Clients = kept
	}
	if b.dir, err = os.MkdirTemp("", "skiff-tunbench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	if b.cert, err = harness.NewCert(b.dir); err != nil {
		return err
	}
	if b.topo, err = newTopology(); err != nil {
		return err
	}
	defer b.topo.close()

	serve, err := harness.StartProcess("serve", "ip", b.topo.inServer(b.self, "role", "serve")...)
	if err != nil {
		return err
	}
	defer serve.Stop()
	if err := waitText(ctx, serve, "serving", 20*time.Second); err != nil {
		return err
	}

	printHeader(b.o, b.skiffBin, skiffTUN)
	var results []result
	var connResults []measure.ConnsResult
	for _, proto := range o.Protocols {
		if err := ctx.Err(); err != nil {
			return err
		}
		rs, cs, err := b.benchProtocol(ctx, proto)
		if err != nil {
			return err
		}
		results = append(results, rs...)
		connResults = append(connResults, cs...)
	}
	printResults(b.o, results, connResults, skiffTUN)
	return nil
}

// benchProtocol starts the server for proto in the server namespace and
// measures each client against it.
func (b *bench) benchProtocol(ctx context.Context, proto string) ([]result, []measure.ConnsResult, error) {
	s, err := measure.Server(proto, 8443, b.cert)
	if err != nil {
		return nil, nil, err
	}
	if s.Site != nil {
		defer s.Site.Close() // started on the host's loopback; the server uses its own (serverConfig)
	}
	cfg, err := serverConfig(s)
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(b.dir, "server-"+proto+".json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, nil, err
	}
	server, err := harness.StartProcess("server-"+proto, "ip", b.topo.inServer(b.sbBin, "run", "--disable-color", "-c", path)...)
	if err != nil {
		return nil, nil, err
	}
	defer server.Stop()
	if err := waitText(ctx, server, "sing-box started", 20*time.Second); err != nil {
		return nil, nil, err
	}
	// The clients take turns run by run (a fresh client process each
	// time), so that a change in the machine's load, shared with other
	// work, falls on both rather than on one.
	rs := make([]result, len(b.o.Clients))
	for k, name := range b.o.Clients {
		rs[k] = result{Result: measure.Result{Protocol: proto, Client: name}}
	}
	for i := 0; i < b.o.Runs && !b.o.ConnsOnly; i++ {
		for k := range rs {
			r := &rs[k]
			if r.Err != nil {
				continue
			}
			if err := b.throughputRun(ctx, r, i, s, server.Pid()); err != nil {
				if ctx.Err() != nil {
					return nil, nil, err
				}
				r.Err = err
				fmt.Fprintf(os.Stderr, "%s via %s: %v\n", proto, r.Client, err)
			}
		}
	}
	if b.o.ConnsOnly {
		rs = nil
	}
	var cs []measure.ConnsResult
	for _, name := range b.o.Clients {
		if b.o.Conns <= 0 {
			break
		}
		c, err := b.connsClient(ctx, proto, name, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			c.Err = err
			fmt.Fprintf(os.Stderr, "%s via %s, %d connections: %v\n", proto, name, b.o.Conns, err)
		}
		cs = append(cs, c)
	}
	return rs, cs, nil
}

// serverConfig is the harness's server configuration listening on every
// address of the server namespace rather than loopback.
func serverConfig(s *harness.Server) ([]byte, error) {
	raw, err := s.ServerConfig()
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	ins := cfg["inbounds"].([]any)
	for _, in := range ins {
		in.(map[string]any)["listen"] = "::"
	}
	if s.Site != nil {
		// REALITY borrows the handshake of a TLS site, which must be
		// reachable from the server's namespace (s.Site listens on the
		// host's loopback): a TLS inbound of this same sing-box serves it.
		tls, _ := ins[0].(map[string]any)["tls"].(map[string]any)
		r, _ := tls["reality"].(map[string]any)
		if r == nil {
			return nil, fmt.Errorf("tunbench: %s: no reality block in the server's config", s.Kind)
		}
		r["handshake"] = map[string]any{"server": "127.0.0.1", "server_port": realitySitePort}
		cfg["inbounds"] = append(ins, map[string]any{
			"type": "http", "tag": "reality-site", "listen": "127.0.0.1", "listen_port": realitySitePort,
			"tls": map[string]any{"enabled": true, "certificate_path": s.Cert.CertFile, "key_path": s.Cert.KeyFile,
				"alpn": []string{"h2", "http/1.1"}, "min_version": "1.3"},
		})
	}
	cfg["log"] = map[string]any{"level": "info", "timestamp": true}
	return json.MarshalIndent(cfg, "", "  ")
}

// client is a running client in the client namespace.
type client struct {
	p        *harness.Process
	tunDev   string
	pprofURL string  // skiff's CPU profile endpoint in the client namespace; "" none
	socket   string  // skiff service's socket; "" for the other clients
	idleMiB  float64 // skiff service's RSS before it connected; 0 for the other clients
}

// realitySitePort is the port, on the server namespace's loopback, of the
// TLS site whose handshake a REALITY server borrows.
const realitySitePort = 8444

// Names and ports inside the client namespace.
const (
	singBoxTUN = "sbtun0"
	pprofAddr  = "127.0.0.1:6060"
)

// startClient starts client for s in the client namespace, waits until a
// connection through its TUN works and checks that the sink is routed
// into the TUN.
func (b *bench) startClient(ctx context.Context, name, proto string, s *harness.Server, profile bool) (*client, error) {
	c := &client{}
	var err error
	switch name {
	case "skiff":
		link, err := serverLink(s)
		if err != nil {
			return nil, err
		}
		if b.o.skiffVia == viaService {
			if err := b.startSkiffService(ctx, c, proto, link); err != nil {
				return nil, err
			}
			break
		}
		args := []string{b.skiffBin, "run", "--tun", "--link", link, "--listen", "127.0.0.1:1080"}
		if profile {
			args = append(args, "--pprof", pprofAddr)
			c.pprofURL = "http://" + pprofAddr + "/debug/pprof/profile"
		}
		// skiff records its route changes in /run/skiff/tun-state.json, a
		// machine-wide file: give this process a private one (ip netns exec
		// runs it in a mount namespace of its own, so the tmpfs stays there).
		wrap := []string{"sh", "-c", `mkdir -p /run/skiff && mount -t tmpfs -o size=1m,mode=0700 tunbench /run/skiff && exec "$0" "$@"`}
		c.p, err = harness.StartProcess("skiff-"+proto, "ip", b.topo.inClient(append(wrap, args...)...)...)
		if err != nil {
			return nil, err
		}
		m, err := waitOutput(ctx, c.p, regexp.MustCompile(`skiff: TUN (\S+) up`), 30*time.Second)
		if err != nil {
			c.p.Stop()
			return nil, err
		}
		c.tunDev = m[1]
	case "sing-box":
		cfg, err := singBoxTUNConfig(s)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(b.dir, "client-"+proto+".json")
		if err := os.WriteFile(path, cfg, 0o600); err != nil {
			return nil, err
		}
		c.p, err = harness.StartProcess("sing-box-"+proto, "ip", b.topo.inClient(b.sbBin, "run", "--disable-color", "-c", path)...)
		if err != nil {
			return nil, err
		}
		if err := waitText(ctx, c.p, "sing-box started", 30*time.Second); err != nil {
			c.p.Stop()
			return nil, err
		}
		c.tunDev = singBoxTUN
	default:
		return nil, fmt.Errorf("unknown client %q", name)
	}
	if err = b.probe(ctx); err == nil {
		err = b.checkRoute(c.tunDev)
	}
	if err != nil {
		c.p.Stop()
		return nil, fmt.Errorf("%w\n--- %s output ---\n%s", err, c.p.Name, tail(c.p.Output(), 30))
	}
	return c, nil
}

// singBoxTUNConfig is sing-box as a TUN client: a tun inbound on the
// gVisor stack with auto-route, the server's addresses kept out of it, and
// everything sent to the server.
func singBoxTUNConfig(s *harness.Server) ([]byte, error) {
	out := s.ClientOutbound()
	out["server"] = serverIP4
	cfg := map[string]any{
		"log": map[string]any{"level": "info", "timestamp": true},
		"inbounds": []any{map[string]any{
			"type":                  "tun",
			"tag":                   "tun",
			"interface_name":        singBoxTUN,
			"address":               []string{"172.19.0.1/30", "fdfe:dcba:9876::1/126"},
			"mtu":                   9000,
			"auto_route":            true,
			"stack":                 "gvisor",
			"route_exclude_address": []string{serverIP4 + "/32", serverIP6 + "/128"},
		}},
		"outbounds": []any{out, map[string]any{"type": "direct", "tag": "direct"}},
		"route":     map[string]any{"final": out["tag"], "auto_detect_interface": true},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// serverLink is the server's share link with the server namespace's
// address in place of loopback.
func serverLink(s *harness.Server) (string, error) {
	c := *s
	c.LinkHost = serverIP4
	return c.Link(c.Trusting()), nil
}

func (b *bench) sinkAddr(port int) string {
	host := sinkIP4
	if b.o.ipv6 {
		host = sinkIP6
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// probe waits until an echo round trip through the client works.
func (b *bench) probe(ctx context.Context) error {
	p, err := harness.StartProcess("probe", "ip", b.topo.inClient(b.self, "role", "probe", "-addr", b.sinkAddr(echoPort), "-timeout", "20s")...)
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := waitText(ctx, p, "probe ok", 30*time.Second); err != nil {
		return fmt.Errorf("no connection through the TUN: %w", err)
	}
	return nil
}

// checkRoute fails unless the client namespace routes the sink into dev.
func (b *bench) checkRoute(dev string) error {
	host := sinkIP4
	if b.o.ipv6 {
		host = sinkIP6
	}
	out, err := b.topo.clientOutput("ip", "route", "get", host)
	if err != nil {
		return err
	}
	if !strings.Contains(out, " dev "+dev+" ") && !strings.HasSuffix(strings.TrimSpace(out), " dev "+dev) {
		return fmt.Errorf("the sink %s is not routed into the TUN %s: %s", host, dev, strings.TrimSpace(out))
	}
	return nil
}

// throughputRun is run i of one client: it starts the client, warms it
// up, measures download then upload, adds the figures to r, raises r's
// peak RSS to the client's and stops the client.
func (b *bench) throughputRun(ctx context.Context, r *result, i int, s *harness.Server, serverPid int) error {
	proto, name := r.Protocol, r.Client
	c, err := b.startClient(ctx, name, proto, s, b.o.CPUProfile != "" || b.o.diag)
	if err != nil {
		return err
	}
	defer c.p.Stop()
	if c.socket != "" {
		r.idleMiB = append(r.idleMiB, c.idleMiB)
		fmt.Fprintf(os.Stderr, "%s via %s: the service's RSS before connecting %.1f MiB\n", proto, name, c.idleMiB)
		if b.o.window > 0 {
			// The window's figure is a side reading: a failure to take it
			// is reported and the service's runs go on.
			if w, err := b.windowIdle(ctx, c, b.o.window); err != nil {
				fmt.Fprintf(os.Stderr, "%s via %s: the window as a client of the service: %v\n", proto, name, err)
			} else {
				r.windowMiB = append(r.windowMiB, w)
				fmt.Fprintf(os.Stderr, "%s via %s: the window (skiff-window under Xvfb, a client of the service) idle RSS %.1f MiB after %v\n", proto, name, w, b.o.window)
			}
		}
	}

	fmt.Fprintf(os.Stderr, "%s via %s (TUN %s): run %d, warm-up %v\n", proto, name, c.tunDev, i+1, b.o.Warmup)
	if _, err := b.load(ctx, c, harness.SinkDownload, b.o.Warmup, serverPid, "", ""); err != nil {
		return fmt.Errorf("warm-up: %w\n%s", err, tail(c.p.Output(), 30))
	}
	for _, dirn := range []byte{harness.SinkDownload, harness.SinkUpload} {
		var profOut, heapOut string
		if c.pprofURL != "" && i == 0 && dirn == b.o.ProfiledDirection(harness.SinkDownload, harness.SinkUpload) {
			if b.o.CPUProfile != "" {
				if profOut, err = filepath.Abs(b.o.CPUProfile + "-" + proto + ".pprof"); err != nil {
					return err
				}
			}
			if b.o.diag && dirn == harness.SinkDownload {
				heapOut = filepath.Join(b.dir, "heap-download-"+proto+".pprof")
			}
		}
		m, err := b.load(ctx, c, dirn, b.o.Duration, serverPid, profOut, heapOut)
		if heapOut != "" {
			b.printHeap(c, "during the download", heapOut)
		}
		if err != nil {
			return fmt.Errorf("run %d: %w\n%s", i+1, err, tail(c.p.Output(), 30))
		}
		f := &r.Down
		dname := "download"
		if dirn == harness.SinkUpload {
			f, dname = &r.Up, "upload"
		}
		if profOut != "" {
			r.profile, r.profileDir = profOut, dname
		}
		f.Add(m.Sample)
		fmt.Fprintf(os.Stderr, "%s via %s: run %d %s %.0f Mbps, client %.2f cores, server %.2f cores, TUN carried %.0f MB for %.0f MB of payload\n",
			proto, name, i+1, dname, m.Mbps, m.ClientCores, m.ServerCores, float64(m.TUNBytes)/1e6, float64(m.Bytes)/1e6)
		// The TUN's counters include headers and ACKs; the payload
		// count includes what still sits in socket buffers. Nine
		// tenths is far above what a bypass could leave.
		if m.TUNBytes < m.Bytes*9/10 {
			return fmt.Errorf("run %d: the TUN %s carried %d bytes for %d bytes of payload: the traffic did not go through it", i+1, c.tunDev, m.TUNBytes, m.Bytes)
		}
	}
	peak, err := measure.MemMiB(c.p.Pid(), "VmHWM")
	r.PeakRSSMiB = max(r.PeakRSSMiB, peak)
	return err
}

// load runs the load role in the client namespace for one direction.
func (b *bench) load(ctx context.Context, c *client, dirn byte, dur time.Duration, serverPid int, profOut, heapOut string) (loadResult, error) {
	var m loadResult
	args := []string{b.self, "role", "load",
		"-sink", b.sinkAddr(sinkPort), "-dir", string(dirn), "-streams", strconv.Itoa(b.o.Streams),
		"-duration", dur.String(), "-client-pid", strconv.Itoa(c.p.Pid()), "-server-pid", strconv.Itoa(serverPid),
		"-tun", c.tunDev}
	if profOut != "" || heapOut != "" {
		args = append(args, "-pprof", c.pprofURL, "-pprof-out", profOut, "-heap-out", heapOut)
	}
	p, err := harness.StartProcess("load", "ip", b.topo.inClient(args...)...)
	if err != nil {
		return m, err
	}
	defer p.Stop()
	got, err := waitOutput(ctx, p, regexp.MustCompile(regexp.QuoteMeta(resultPrefix)+`(\{.*\})`), dur+60*time.Second)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal([]byte(got[1]), &m)
}

// connsClient starts a fresh client for s and runs the many-connection
// load through its TUN, reading the client's figures at each phase.
func (b *bench) connsClient(ctx context.Context, proto, name string, s *harness.Server) (measure.ConnsResult, error) {
	r := measure.ConnsResult{Protocol: proto, Client: name, N: b.o.Conns, Phases: map[string]measure.PhaseFigures{}}
	c, err := b.startClient(ctx, name, proto, s, name == "skiff")
	if err != nil {
		return r, err
	}
	defer c.p.Stop()
	pid := c.p.Pid()
	if err := sleep(ctx, time.Second); err != nil {
		return r, err
	}
	r.BaseMiB, _ = measure.MemMiB(pid, "VmRSS")
	var rt measure.Runtime
	switch {
	case c.pprofURL != "":
		rt = measure.PprofRuntime(strings.TrimSuffix(c.pprofURL, "profile"), func(u string) (string, error) {
			out, err := exec.Command("ip", b.topo.inClient(b.self, "role", "get", "-url", u)...).Output()
			return string(out), err
		})
	case c.socket != "":
		socket := c.socket
		rt = func() (uint64, int, error) { return harness.ServiceRuntime(socket) }
	}
	fmt.Fprintf(os.Stderr, "%s via %s: %d connections through TUN %s\n", proto, name, b.o.Conns, c.tunDev)
	p, err := harness.StartProcess("conns", "ip", b.topo.inClient(b.self, "role", "conns",
		"-addr", b.sinkAddr(echoPort), "-n", strconv.Itoa(b.o.Conns), "-size", strconv.Itoa(b.o.ConnSize),
		"-hold", b.o.Hold.String(), "-idle", b.o.IdleWait.String())...)
	if err != nil {
		return r, err
	}
	defer p.Stop()
	cpu0 := measure.CPUSeconds(pid)
	for _, phase := range measure.Phases {
		if _, err := waitOutput(ctx, p, regexp.MustCompile(`PHASE `+phase+`\b`), 5*time.Minute); err != nil {
			return r, err
		}
		f := measure.ReadPhase(pid, rt)
		r.Phases[phase] = f
		if phase == measure.PhaseHeld {
			r.PeakMiB, _ = measure.MemMiB(pid, "VmHWM")
			r.CPUSeconds = measure.CPUSeconds(pid) - cpu0
		}
		fmt.Fprintf(os.Stderr, "%s via %s: %s: RSS %.1f MiB, heap %.1f MiB, %d goroutines\n", proto, name, phase, f.RSSMiB, f.HeapMiB, f.Goroutines)
		anon, _ := measure.MemMiB(pid, "RssAnon")
		file, _ := measure.MemMiB(pid, "RssFile")
		fmt.Fprintf(os.Stderr, "%s via %s: %s: RSS anonymous %.1f MiB, file-backed %.1f MiB\n", proto, name, phase, anon, file)
		if b.o.diag {
			b.heapTop(c, proto, phase)
		}
	}
	m, err := waitOutput(ctx, p, regexp.MustCompile(regexp.QuoteMeta(resultPrefix)+`(\{.*\})`), time.Minute)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(m[1]), &r.Outcome); err != nil {
		return r, err
	}
	return r, p.Wait(ctx)
}

// skiffHasTUN reports whether the skiff binary's run command has --tun.
func skiffHasTUN(bin string) bool {
	out, _ := exec.Command(bin, "run", "-h").CombinedOutput()
	return strings.Contains(string(out), "-tun")
}

func waitText(ctx context.Context, p *harness.Process, s string, d time.Duration) error {
	_, err := waitOutput(ctx, p, regexp.MustCompile(regexp.QuoteMeta(s)), d)
	return err
}

func waitOutput(ctx context.Context, p *harness.Process, re *regexp.Regexp, d time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return p.WaitOutput(ctx, re)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func tail(s string, lines int) string {
	parts := strings.SplitAfter(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "")
}

// heapTop prints to stderr where skiff's live heap sits at a phase of the
// many-connection load (in-use space after a GC).
func (b *bench) heapTop(c *client, proto, phase string) {
	if c.pprofURL == "" {
		return
	}
	u := strings.TrimSuffix(c.pprofURL, "profile") + "heap?gc=1"
	dir := b.dir
	if b.o.CPUProfile != "" { // kept beside the CPU profiles
		dir = filepath.Dir(b.o.CPUProfile)
	}
	path := filepath.Join(dir, "heap-"+proto+"-"+phase+".pprof")
	out, err := exec.Command("ip", b.topo.inClient(b.self, "role", "get", "-url", u)...).Output()
	if err == nil {
		err = os.WriteFile(path, out, 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: heap profile: %v\n", c.p.Name, err)
		return
	}
	u = strings.TrimSuffix(c.pprofURL, "profile") + "heap?debug=1"
	if txt, err := exec.Command("ip", b.topo.inClient(b.self, "role", "get", "-url", u)...).Output(); err == nil {
		os.WriteFile(path+".txt", txt, 0o600)
	}
	b.printHeap(c, "at phase "+phase, path)
}

// printHeap prints to stderr the runtime's memory figures (from path.txt,
// when there) and the top of the in-use heap profile at path.
func (b *bench) printHeap(c *client, when, path string) {
	if txt, err := os.ReadFile(path + ".txt"); err == nil {
		var figs []string
		for _, m := range memStatsRE.FindAllStringSubmatch(string(txt), -1) {
			v, _ := strconv.ParseFloat(m[2], 64)
			figs = append(figs, fmt.Sprintf("%s %.1f MiB", m[1], v/(1<<20)))
		}
		fmt.Fprintf(os.Stderr, "%s: Go memory %s: %s\n", c.p.Name, when, strings.Join(figs, ", "))
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=20", "-sample_index=inuse_space", path).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: heap profile: %v\n%s", c.p.Name, err, out)
		return
	}
	fmt.Fprintf(os.Stderr, "%s: live heap %s:\n%s\n", c.p.Name, when, out)
}

// memStatsRE picks the runtime.MemStats lines of /debug/pprof/heap?debug=1.
// (StackInuse and MSpanInuse are printed as "# Stack = inuse / sys".)
var memStatsRE = regexp.MustCompile(`(?m)^# (Sys|HeapSys|HeapInuse|HeapIdle|HeapReleased|Stack|MSpan|GCSys|OtherSys) = (\d+)`)
