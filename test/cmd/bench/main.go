// Command bench measures skiff against sing-box as the client, both talking
// to the same sing-box server on loopback, one client at a time: 16
// concurrent TCP streams through the client's SOCKS5 to a sink/source,
// download and upload measured separately, N runs with the median, the
// clients taking turns run by run. It
// reports throughput, the client's CPU efficiency (Mbps per core the client
// process used) and the client's peak RSS, with skiff/sing-box ratios.
// Then (-conns N, default 500; 0 none) a fresh client carries N concurrent
// connections to a loopback echo, each moving -conn-size bytes each way at
// once, held open and idle for -hold, closed and left idle for -idle-wait
// (measure.Conns): the client's RSS, and skiff's Go heap and goroutines
// (from the service's API, or skiff run's --pprof endpoint), at each phase; -conns-only skips the
// 16-stream runs, -heapprofile saves skiff's heap profile at each phase.
// -perf adds profiled runs of each client, taken the same way for both
// with Linux perf (CPU samples with the kernel's share, and system-call
// counts), for comparing where each client's CPU per byte goes.
//
// skiff is the service users run: `skiff service` (root, in a mount
// namespace with a private /run/skiff), connected by `skiff import LINK`
// and `skiff connect --listen ADDR` over its socket; its RSS is the
// service's. -skiff-via run measures `skiff run` instead (the core in one
// process, with the pprof endpoint that -cpuprofile and the heap figures
// need).
//
// Run it with `make bench` in test/ (or `go run ./cmd/bench -quick` for a
// short pass). It is not a timed test and is not part of CI.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

func main() {
	var o measure.Settings
	o.Register(flag.CommandLine, "short pass: 5 s per direction, 2 s warm-up",
		"write skiff's CPU profile of the first download (or -profile-upload) run to FILE-<protocol>.pprof (via skiff run --pprof)", 0)
	flag.StringVar(&heapProfile, "heapprofile", "", "many-connection phase: save skiff's heap profile at each phase to FILE-<protocol>-<phase>.pprof")
	flag.StringVar(&perfPrefix, "perf", "", "after the measured runs, -perf-runs more runs per direction and client (not in the medians, clients taking turns) with Linux perf attached to the client: writes FILE-<protocol>-<client>-<direction>-<N>.data (perf record -g), .stat (perf stat of its system calls) and .json (bytes moved, user and system CPU)")
	flag.IntVar(&perfRuns, "perf-runs", 1, "with -perf: profiled runs per direction and client")
	flag.StringVar(&skiffVia, "skiff-via", "service", "how skiff runs: service (`skiff service` as root, connected over its socket: what users run) or run (`skiff run`, needed for -cpuprofile, -heapprofile and the heap figures)")
	flag.Parse()
	o.Resolve(flag.CommandLine)
	switch {
	case skiffVia != "service" && skiffVia != "run":
		fmt.Fprintf(os.Stderr, "bench: -skiff-via %q: service or run\n", skiffVia)
		os.Exit(2)
	case skiffVia == "service" && (o.CPUProfile != "" || heapProfile != ""):
		fmt.Fprintln(os.Stderr, "bench: -cpuprofile and -heapprofile read skiff's pprof endpoint, which only `skiff run --pprof` has: use -skiff-via run")
		os.Exit(2)
	case skiffVia == "service" && os.Geteuid() != 0:
		fmt.Fprintln(os.Stderr, "bench: `skiff service` runs as root: run the benchmark as root, or use -skiff-via run")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// heapProfile is the -heapprofile prefix; "" none.
var heapProfile string

// skiffVia is -skiff-via: "service" or "run".
var skiffVia string

// services numbers the services started, for their private directories.
var services int

func run(o measure.Settings) error {
	skiffBin, err := harness.SkiffBinary()
	if err != nil {
		return err
	}
	sbBin, err := harness.SingBoxBinary()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "skiff-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cert, err := harness.NewCert(dir)
	if err != nil {
		return err
	}
	sink, err := harness.ServeTCP(harness.SinkSource)
	if err != nil {
		return err
	}
	defer sink.Close()
	echo, err := harness.ServeTCP(harness.EchoTCP)
	if err != nil {
		return err
	}
	defer echo.Close()

	printHeader(o, skiffBin)
	var results []measure.Result
	var conns []measure.ConnsResult
	for _, proto := range o.Protocols {
		s, server, err := measure.StartServer(proto, sbBin, dir, cert)
		if err != nil {
			return err
		}
		if !o.ConnsOnly {
			results = append(results, benchClients(o, proto, s, server.Pid(), sink.Addr(), skiffBin, sbBin, dir)...)
		}
		for _, client := range o.Clients {
			if o.Conns <= 0 {
				break
			}
			c, err := connsClient(o, proto, client, s, echo.Addr(), skiffBin, sbBin, dir)
			if err != nil {
				c.Err = err
				fmt.Fprintf(os.Stderr, "%s via %s, %d connections: %v\n", proto, client, o.Conns, err)
			}
			conns = append(conns, c)
		}
		server.Stop()
		if s.Site != nil {
			s.Site.Close()
		}
	}
	if len(results) > 0 {
		printResults(o, results)
	}
	measure.PrintConns(os.Stdout, fmt.Sprintf("many connections through the client's SOCKS5: %d connections to a loopback echo, %d KiB each way at once (busy),\n"+
		"held open and idle %v (held), closed (closed: %v later), idle %v after closing (idle); fresh client:", o.Conns, o.ConnSize>>10, o.Hold, 2*time.Second, o.IdleWait), conns)
	return nil
}

// startClient starts client for s with its SOCKS5 proxy; with pprof, skiff
// also serves its pprof endpoint, whose base URL is returned.
func startClient(ctx context.Context, proto, client string, s *harness.Server, pprof bool, skiffBin, sbBin, dir string) (p *harness.Process, proxy, pprofBase string, rt measure.Runtime, err error) {
	switch client {
	case "skiff":
		if skiffVia == "service" {
			svc, proxy, err := startService(ctx, proto, s, skiffBin, dir)
			if err != nil {
				return nil, "", "", nil, err
			}
			return svc.Process, proxy, "", svc.Runtime, nil
		}
		var extra []string
		if pprof {
			pp, err := harness.FreePort()
			if err != nil {
				return nil, "", "", nil, err
			}
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pp))
			extra = []string{"--pprof", addr}
			pprofBase = "http://" + addr + "/debug/pprof/"
			rt = measure.PprofRuntime(pprofBase, measure.HTTPGet)
		}
		p, proxy, err = harness.StartSkiffRun(ctx, skiffBin, []string{s.Link(s.Trusting())}, extra...)
		return p, proxy, pprofBase, rt, err
	case "sing-box":
		port, err := harness.FreePort()
		if err != nil {
			return nil, "", "", nil, err
		}
		cfg, err := harness.ClientConfig(port, s.ClientOutbound())
		if err != nil {
			return nil, "", "", nil, err
		}
		p, err = harness.StartSingBox(ctx, sbBin, dir, "client-"+proto, cfg)
		proxy = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err == nil {
			if err = harness.WaitTCP(ctx, proxy); err != nil {
				p.Stop()
			}
		}
		return p, proxy, "", nil, err
	}
	return nil, "", "", nil, fmt.Errorf("unknown client %q", client)
}

// startService starts `skiff service` as root in a mount namespace with a
// private /run/skiff (its TUN state file is machine-wide; this run uses
// none, but the service cleans up what it finds there at start), imports
// s's link and connects its local proxy on a free loopback port, through
// the service's socket.
func startService(ctx context.Context, proto string, s *harness.Server, skiffBin, dir string) (*harness.SkiffService, string, error) {
	services++
	svc, err := harness.StartSkiffService(ctx, "skiff-service-"+proto, skiffBin, filepath.Join(dir, fmt.Sprintf("service-%d", services)),
		"unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mkdir -p /run/skiff && mount -t tmpfs -o size=1m,mode=0700 bench /run/skiff && exec "$0" "$@"`)
	if err != nil {
		return nil, "", err
	}
	port, err := harness.FreePort()
	if err != nil {
		svc.Stop()
		return nil, "", err
	}
	proxy := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if _, err := svc.Connect(ctx, s.Link(s.Trusting()), "--listen", proxy); err != nil {
		svc.Stop()
		return nil, "", fmt.Errorf("%w\n%s", err, svc.Output())
	}
	if err := harness.WaitTCP(ctx, proxy); err != nil {
		svc.Stop()
		return nil, "", err
	}
	return svc, proxy, nil
}

// connsClient runs the many-connection load through a fresh client and
// reads its figures at each phase.
func connsClient(o measure.Settings, proto, client string, s *harness.Server, echo, skiffBin, sbBin, dir string) (measure.ConnsResult, error) {
	r := measure.ConnsResult{Protocol: proto, Client: client, N: o.Conns, Phases: map[string]measure.PhaseFigures{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	p, proxy, pprofBase, rt, err := startClient(ctx, proto, client, s, true, skiffBin, sbBin, dir)
	cancel()
	if err != nil {
		return r, err
	}
	defer p.Stop()
	time.Sleep(time.Second)
	r.BaseMiB, _ = measure.MemMiB(p.Pid(), "VmRSS")
	load := measure.Conns{
		Dial: func(ctx context.Context) (net.Conn, error) { return harness.DialSOCKS(ctx, proxy, echo) },
		N:    o.Conns, Size: o.ConnSize, Hold: o.Hold, Idle: o.IdleWait,
	}
	fmt.Fprintf(os.Stderr, "%s via %s: %d connections\n", proto, client, o.Conns)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cpu0 := measure.CPUSeconds(p.Pid())
	r.Outcome, err = load.Run(ctx, func(phase string) {
		f := measure.ReadPhase(p.Pid(), rt)
		r.Phases[phase] = f
		if heapProfile != "" && pprofBase != "" {
			path := heapProfile + "-" + proto + "-" + phase + ".pprof"
			if err := measure.Fetch(pprofBase+"heap", path, 30*time.Second); err != nil {
				fmt.Fprintf(os.Stderr, "heapprofile: %v\n", err)
			}
			// The runtime's figures (stacks included) and the goroutines'
			// stacks, beside the profile.
			measure.Fetch(pprofBase+"heap?debug=1", path+".txt", 30*time.Second)
			measure.Fetch(pprofBase+"goroutine?debug=1", path+".goroutines.txt", 30*time.Second)
		}
		if phase == measure.PhaseHeld {
			r.PeakMiB, _ = measure.MemMiB(p.Pid(), "VmHWM")
			r.CPUSeconds = measure.CPUSeconds(p.Pid()) - cpu0
		}
		fmt.Fprintf(os.Stderr, "%s via %s: %s: RSS %.1f MiB, heap %.1f MiB, %d goroutines\n", proto, client, phase, f.RSSMiB, f.HeapMiB, f.Goroutines)
	})
	if err != nil {
		return r, fmt.Errorf("%w\n%s", err, p.Output())
	}
	return r, nil
}

// benchClients starts every client for s, warms each up, and measures both
// directions o.Runs times, the clients taking turns run by run (skiff's
// download, sing-box's download, skiff's upload, ...): on a machine whose
// load moves over minutes, as a shared one's does, each client's runs
// then fall in the same stretch of it, where one client's runs all
// before the other's had put a ±30 % swing between them. A client that
// does not start, or fails a run, gets its error in its result and drops
// out; the others go on. Idle, the waiting clients cost next to nothing.
func benchClients(o measure.Settings, proto string, s *harness.Server, serverPid int, sink, skiffBin, sbBin, dir string) []measure.Result {
	type live struct {
		r        measure.Result
		p        *harness.Process
		load     measure.Load
		pprofURL string
	}
	var cs []*live
	for _, client := range o.Clients {
		c := &live{r: measure.Result{Protocol: proto, Client: client}}
		cs = append(cs, c)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		p, proxy, pprofBase, _, err := startClient(ctx, proto, client, s, o.CPUProfile != "", skiffBin, sbBin, dir)
		cancel()
		if err != nil {
			c.r.Err = err
			fmt.Fprintf(os.Stderr, "%s via %s: %v\n", proto, client, err)
			continue
		}
		defer p.Stop()
		c.p = p
		if pprofBase != "" {
			c.pprofURL = pprofBase + "profile"
		}
		c.load = measure.Load{
			Dial:      func(ctx context.Context) (net.Conn, error) { return harness.DialSOCKS(ctx, proxy, sink) },
			Dir:       harness.SinkDownload,
			Streams:   o.Streams,
			Duration:  o.Warmup,
			ClientPid: p.Pid(),
			ServerPid: serverPid,
		}
		fmt.Fprintf(os.Stderr, "%s via %s: warm-up %v\n", proto, client, o.Warmup)
		if _, err := c.load.Run(); err != nil {
			c.r.Err = fmt.Errorf("warm-up: %w\n%s", err, p.Output())
			fmt.Fprintf(os.Stderr, "%s via %s: %v\n", proto, client, c.r.Err)
		}
	}
	for i := 0; i < o.Runs; i++ {
		for _, dirn := range []byte{harness.SinkDownload, harness.SinkUpload} {
			for _, c := range cs {
				if c.r.Err != nil {
					continue
				}
				var prof chan error
				if c.pprofURL != "" && i == 0 && dirn == o.ProfiledDirection(harness.SinkDownload, harness.SinkUpload) {
					prof = make(chan error, 1)
					go func() { prof <- fetchProfile(c.pprofURL, o.Duration, o.CPUProfile+"-"+proto+".pprof") }()
				}
				load := c.load
				load.Dir, load.Duration = dirn, o.Duration
				m, err := load.Run()
				if prof != nil {
					if err := <-prof; err != nil {
						fmt.Fprintf(os.Stderr, "cpuprofile: %v\n", err)
					}
				}
				if err != nil {
					c.r.Err = fmt.Errorf("run %d: %w\n%s", i+1, err, c.p.Output())
					fmt.Fprintf(os.Stderr, "%s via %s: %v\n", proto, c.r.Client, c.r.Err)
					continue
				}
				f := &c.r.Down
				name := "download"
				if dirn == harness.SinkUpload {
					f, name = &c.r.Up, "upload"
				}
				f.Add(m)
				fmt.Fprintf(os.Stderr, "%s via %s: run %d %s %.0f Mbps, client %.2f cores, server %.2f cores\n",
					proto, c.r.Client, i+1, name, m.Mbps, m.ClientCores, m.ServerCores)
			}
		}
	}
	for k := 1; perfPrefix != "" && k <= perfRuns; k++ {
		for _, dirn := range []byte{harness.SinkDownload, harness.SinkUpload} {
			for _, c := range cs {
				if c.r.Err != nil {
					continue
				}
				load := c.load
				load.Dir, load.Duration = dirn, o.Duration
				prefix := fmt.Sprintf("%s-%s-%s-%s-%d", perfPrefix, proto, c.r.Client, directionName(dirn), k)
				r := perfRun{Protocol: proto, Client: c.r.Client, Direction: directionName(dirn)}
				if err := perfProfile(load, c.p.Pid(), prefix, r); err != nil {
					fmt.Fprintf(os.Stderr, "perf: %s via %s: %v\n", proto, c.r.Client, err)
				}
			}
		}
	}
	rs := make([]measure.Result, 0, len(cs))
	for _, c := range cs {
		if c.r.Err == nil {
			var err error
			if c.r.PeakRSSMiB, err = measure.MemMiB(c.p.Pid(), "VmHWM"); err != nil {
				c.r.Err = err
			}
		}
		rs = append(rs, c.r)
	}
	return rs
}

// fetchProfile saves skiff's CPU profile over d to path.
func fetchProfile(url string, d time.Duration, path string) error {
	if err := measure.FetchProfile(url, d, path); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cpuprofile: wrote %s (go tool pprof %s)\n", path, path)
	return nil
}

func printHeader(o measure.Settings, skiffBin string) {
	measure.PrintMachine(os.Stdout, "skiff client benchmark", skiffBin)
	fmt.Printf("load:      %s (load average before the run; other work on the machine skews the figures)\n", measure.LoadAvg())
	fmt.Printf("settings:  %d TCP streams through the client's SOCKS5 to a loopback sink/source; %v per direction after a %v warm-up; %d runs, median; the clients take turns run by run\n",
		o.Streams, o.Duration, o.Warmup, o.Runs)
	if skiffVia == "service" {
		fmt.Println("           skiff: `skiff service` (root), connected by `skiff import LINK` and `skiff connect --listen ADDR` over its socket; its RSS is the service's")
	} else {
		fmt.Println("           skiff: `skiff run --link LINK` (the core in one process)")
	}
	fmt.Println("           server: sing-box", harness.SingBoxVersion, "on loopback, self-signed ECDSA P-256 certificate; Hysteria2 without bandwidth hints (BBR both ways), TUIC v5 with cubic, AnyTLS with the default padding scheme, VLESS over WebSocket over TLS 1.3")
	fmt.Println("note:      everything runs on this one machine: the sing-box server, the sink/source and this program share")
	fmt.Println("           the cores with the client under test, so absolute figures are far below a real two-host setup;")
	fmt.Println("           compare the ratios skiff/sing-box measured in this same run, not the absolute numbers.")
	fmt.Println()
}

func printResults(o measure.Settings, rs []measure.Result) {
	measure.PrintTable(os.Stdout, rs)
	measure.PrintRatios(os.Stdout, "ratios skiff / sing-box (this run):", rs, o.Protocols, "target (throughput / efficiency / memory)",
		func(proto string, _ measure.Ratios) string { return target(proto) })
	fmt.Println()
	fmt.Println("targets: the field's best published client (shared/reference/benchmarks.md) against sing-box on a 2-vCPU host;")
	fmt.Println("         higher throughput and efficiency ratios are better, a lower memory ratio is better. The VLESS target")
	fmt.Println("         is for VLESS without WebSocket; VLESS+WS+TLS costs more per byte. Not covered here: loss, latency,")
	fmt.Println("         UDP throughput and a real network between client and server.")
}

func target(proto string) string {
	switch proto {
	case "hysteria2":
		return "≥1.56x / ≥1.71x / ≤0.26x"
	case "tuic":
		return "- / ≥1.5x / ≤0.45x" // issue 14
	case "hysteria":
		return "- / ≥1.2x / ≤0.45x" // issue 33
	case "anytls":
		return "- / ≥1.3x / ≤0.5x" // issue 14
	case "vless-ws", "vless-tcp", "vless-grpc":
		return "≥1.08x / ≥0.83x / ≤0.45x"
	case "ss2022":
		return "≥1.00x / ≥1.40x / ≤0.45x"
	case "trojan-tls", "trojan-ws", "vmess-tls", "vmess-ws", "vmess-tcp", "vmess-h2":
		return "≥1.00x / ≥1.10x / ≤0.50x" // issue 13
	case "vless-reality", "vless-reality-vision":
		return "≥1.00x / ≥1.30x / ≤0.50x" // issue 14
	}
	return "-"
}
