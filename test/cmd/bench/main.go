// Command bench measures skiff against sing-box as the client, both talking
// to the same sing-box server on loopback, one client at a time: 16
// concurrent TCP streams through the client's SOCKS5 to a sink/source,
// download and upload measured separately, N runs with the median. It
// reports throughput, the client's CPU efficiency (Mbps per core the client
// process used) and the client's peak RSS, with skiff/sing-box ratios.
//
// Run it with `make bench` in test/ (or `go run ./cmd/bench -quick` for a
// short pass). It is not a timed test and is not part of CI.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

type options struct {
	duration   time.Duration
	warmup     time.Duration
	runs       int
	streams    int
	protocols  []string
	clients    []string
	cpuprofile string
}

func main() {
	var (
		o         options
		quick     bool
		protocols string
		clients   string
	)
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "measured time per direction per run")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "warm-up transfer before the runs of each client")
	flag.IntVar(&o.runs, "runs", 3, "runs per direction; the median is reported")
	flag.IntVar(&o.streams, "streams", 16, "concurrent TCP streams")
	flag.BoolVar(&quick, "quick", false, "short pass: 5 s per direction, 2 s warm-up")
	flag.StringVar(&protocols, "protocols", "hysteria2,vless-ws", "comma-separated: hysteria2, vless-ws, vless-tcp")
	flag.StringVar(&clients, "clients", "skiff,sing-box", "comma-separated: skiff, sing-box")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write skiff's CPU profile of the first download run to FILE-<protocol>.pprof (via skiff run --pprof)")
	flag.Parse()
	if quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] {
			o.duration = 5 * time.Second
		}
		if !set["warmup"] {
			o.warmup = 2 * time.Second
		}
	}
	o.protocols = strings.Split(protocols, ",")
	o.clients = strings.Split(clients, ",")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// result is one client's figures for one protocol.
type result struct {
	protocol, client string
	down, up         figures
	peakRSSMiB       float64
	err              error // the client could not be measured
}

// figures are the runs of one direction.
type figures struct {
	mbps        []float64
	clientCores []float64
	serverCores []float64
}

func (f figures) medianMbps() float64 { return median(f.mbps) }

// efficiency is the median over runs of Mbps per client core.
func (f figures) efficiency() float64 {
	var e []float64
	for i := range f.mbps {
		if f.clientCores[i] > 0 {
			e = append(e, f.mbps[i]/f.clientCores[i])
		}
	}
	return median(e)
}

func run(o options) error {
	skiffBin, err := harness.SkiffCoreBinary()
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

	printHeader(o, skiffBin, sbBin)
	var results []result
	for _, proto := range o.protocols {
		port, err := harness.FreePort()
		if err != nil {
			return err
		}
		s := &harness.Server{Port: port, Cert: cert, Password: "bench-password", UUID: "6f1c3e0a-9d2b-4c7e-8f5a-1b2c3d4e5f60", Path: "/ws"}
		switch proto {
		case "hysteria2":
			s.Kind = harness.Hysteria2
		case "vless-ws":
			s.Kind = harness.VLESSWS
		case "vless-tcp":
			s.Kind = harness.VLESSTCP
		default:
			return fmt.Errorf("unknown protocol %q", proto)
		}
		cfg, err := s.ServerConfig()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		server, err := harness.StartSingBox(ctx, sbBin, dir, "server-"+proto, cfg)
		cancel()
		if err != nil {
			return err
		}
		for _, client := range o.clients {
			r, err := benchClient(o, proto, client, s, server.Pid(), sink.Addr(), skiffBin, sbBin, dir)
			if err != nil {
				r.err = err
				fmt.Fprintf(os.Stderr, "%s via %s: %v\n", proto, client, err)
			}
			results = append(results, r)
		}
		server.Stop()
	}
	printResults(o, results)
	return nil
}

// benchClient starts one client for s, warms it up, measures both
// directions o.runs times and stops it.
func benchClient(o options, proto, client string, s *harness.Server, serverPid int, sink, skiffBin, sbBin, dir string) (result, error) {
	r := result{protocol: proto, client: client}
	var (
		p        *harness.Process
		proxy    string
		pprofURL string
		err      error
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch client {
	case "skiff":
		var extra []string
		if o.cpuprofile != "" {
			pp, err := harness.FreePort()
			if err != nil {
				return r, err
			}
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pp))
			extra = []string{"--pprof", addr}
			pprofURL = "http://" + addr + "/debug/pprof/profile"
		}
		p, proxy, err = harness.StartSkiffRun(ctx, skiffBin, []string{s.Link(s.Trusting())}, extra...)
	case "sing-box":
		var port int
		port, err = harness.FreePort()
		if err != nil {
			return r, err
		}
		var cfg []byte
		cfg, err = harness.ClientConfig(port, s.ClientOutbound())
		if err != nil {
			return r, err
		}
		p, err = harness.StartSingBox(ctx, sbBin, dir, "client-"+proto, cfg)
		proxy = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err == nil {
			err = harness.WaitTCP(ctx, proxy)
		}
	default:
		return r, fmt.Errorf("unknown client %q", client)
	}
	if err != nil {
		return r, err
	}
	defer p.Stop()

	fmt.Fprintf(os.Stderr, "%s via %s: warm-up %v\n", proto, client, o.warmup)
	if _, err := measure(proxy, sink, harness.SinkDownload, o.streams, o.warmup, p.Pid(), serverPid); err != nil {
		return r, fmt.Errorf("warm-up: %w\n%s", err, p.Output())
	}
	for i := 0; i < o.runs; i++ {
		for _, dirn := range []byte{harness.SinkDownload, harness.SinkUpload} {
			var prof chan error
			if pprofURL != "" && i == 0 && dirn == harness.SinkDownload {
				prof = make(chan error, 1)
				go func() { prof <- fetchProfile(pprofURL, o.duration, o.cpuprofile+"-"+proto+".pprof") }()
			}
			m, err := measure(proxy, sink, dirn, o.streams, o.duration, p.Pid(), serverPid)
			if err != nil {
				return r, fmt.Errorf("run %d: %w\n%s", i+1, err, p.Output())
			}
			if prof != nil {
				if err := <-prof; err != nil {
					fmt.Fprintf(os.Stderr, "cpuprofile: %v\n", err)
				}
			}
			f := &r.down
			name := "download"
			if dirn == harness.SinkUpload {
				f, name = &r.up, "upload"
			}
			f.mbps = append(f.mbps, m.mbps)
			f.clientCores = append(f.clientCores, m.clientCores)
			f.serverCores = append(f.serverCores, m.serverCores)
			fmt.Fprintf(os.Stderr, "%s via %s: run %d %s %.0f Mbps, client %.2f cores, server %.2f cores\n",
				proto, client, i+1, name, m.mbps, m.clientCores, m.serverCores)
		}
	}
	r.peakRSSMiB, err = peakRSSMiB(p.Pid())
	return r, err
}

// measurement is one direction of one run.
type measurement struct {
	mbps        float64
	clientCores float64
	serverCores float64
}

// measure opens streams connections through the SOCKS5 proxy to the sink,
// lets them ramp up, then counts the bytes moved in direction dirn and the
// CPU time the client and server used over dur.
func measure(proxy, sink string, dirn byte, streams int, dur time.Duration, clientPid, serverPid int) (measurement, error) {
	var m measurement
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conns := make([]net.Conn, 0, streams)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range streams {
		c, err := harness.DialSOCKS(ctx, proxy, sink)
		if err != nil {
			return m, err
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte{dirn}); err != nil {
			return m, err
		}
	}
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		stop  atomic.Bool
	)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			if dirn == harness.SinkUpload {
				copy(buf, strings.Repeat("skiff bench data", len(buf)/16))
			}
			for !stop.Load() {
				var n int
				var err error
				if dirn == harness.SinkDownload {
					n, err = c.Read(buf)
				} else {
					n, err = c.Write(buf)
				}
				total.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // ramp-up, not counted
	b0, c0, s0, t0 := total.Load(), cpuSeconds(clientPid), cpuSeconds(serverPid), time.Now()
	time.Sleep(dur)
	b1, c1, s1, t1 := total.Load(), cpuSeconds(clientPid), cpuSeconds(serverPid), time.Now()
	stop.Store(true)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	el := t1.Sub(t0).Seconds()
	m.mbps = float64(b1-b0) * 8 / el / 1e6
	m.clientCores = (c1 - c0) / el
	m.serverCores = (s1 - s0) / el
	if b1 == b0 {
		return m, fmt.Errorf("no data moved in %v", dur)
	}
	return m, nil
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// cpuSeconds returns utime+stime of pid from /proc/PID/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// The command name may contain spaces; fields resume after its ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / clockTicks
}

// peakRSSMiB returns VmHWM of pid in MiB.
func peakRSSMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("VmHWM not in /proc/%d/status", pid)
}

// fetchProfile saves skiff's CPU profile over d to path.
func fetchProfile(url string, d time.Duration, path string) error {
	secs := max(1, int(d.Seconds()))
	client := &http.Client{Timeout: d + 30*time.Second}
	resp, err := client.Get(fmt.Sprintf("%s?seconds=%d", url, secs))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(os.Stderr, "cpuprofile: wrote %s (go tool pprof %s)\n", path, path)
	return f.Close()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printHeader(o options, skiffBin, sbBin string) {
	fmt.Println("# skiff client benchmark")
	fmt.Println()
	fmt.Printf("date:      %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("machine:   %s, %d logical CPUs, %s, Linux %s\n", cpuModel(), runtime.NumCPU(), memTotal(), kernel())
	fmt.Printf("versions:  skiff %s (%s), sing-box %s, %s\n", skiffRevision(skiffBin), filepath.Base(skiffBin), harness.SingBoxVersion, runtime.Version())
	fmt.Printf("load:      %s (load average before the run; other work on the machine skews the figures)\n", loadAvg())
	fmt.Printf("settings:  %d TCP streams through the client's SOCKS5 to a loopback sink/source; %v per direction after a %v warm-up; %d runs, median\n",
		o.streams, o.duration, o.warmup, o.runs)
	fmt.Println("           server: sing-box", harness.SingBoxVersion, "on loopback, self-signed ECDSA P-256 certificate; Hysteria2 without bandwidth hints (BBR both ways), VLESS over WebSocket over TLS 1.3")
	fmt.Println("note:      everything runs on this one machine: the sing-box server, the sink/source and this program share")
	fmt.Println("           the cores with the client under test, so absolute figures are far below a real two-host setup;")
	fmt.Println("           compare the ratios skiff/sing-box measured in this same run, not the absolute numbers.")
	fmt.Println()
}

func printResults(o options, rs []result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "protocol\tclient\tdown Mbps\tdown Mbps/core\tup Mbps\tup Mbps/core\tpeak RSS MiB\tclient cores (down/up)\tserver cores (down/up)\t")
	for _, r := range rs {
		if r.err != nil {
			fmt.Fprintf(w, "%s\t%s\tfailed\t-\t-\t-\t-\t-\t-\t\n", r.protocol, r.client)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.2f/%.2f\t%.2f/%.2f\t\n",
			r.protocol, r.client, r.down.medianMbps(), r.down.efficiency(), r.up.medianMbps(), r.up.efficiency(), r.peakRSSMiB,
			median(r.down.clientCores), median(r.up.clientCores), median(r.down.serverCores), median(r.up.serverCores))
	}
	w.Flush()
	for _, r := range rs {
		if r.err != nil {
			fmt.Printf("%s via %s failed: %s\n", r.protocol, r.client, r.err)
		}
	}
	fmt.Println()

	fmt.Println("ratios skiff / sing-box (this run):")
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "protocol\tdown throughput\tup throughput\tdown efficiency\tup efficiency\tpeak memory\ttarget (throughput / efficiency / memory)\t")
	for _, proto := range o.protocols {
		var sk, sb *result
		for i := range rs {
			if rs[i].protocol == proto && rs[i].client == "skiff" {
				sk = &rs[i]
			}
			if rs[i].protocol == proto && rs[i].client == "sing-box" {
				sb = &rs[i]
			}
		}
		if sk == nil || sb == nil || sk.err != nil || sb.err != nil {
			continue
		}
		fmt.Fprintf(w, "%s\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%s\t\n", proto,
			ratio(sk.down.medianMbps(), sb.down.medianMbps()), ratio(sk.up.medianMbps(), sb.up.medianMbps()),
			ratio(sk.down.efficiency(), sb.down.efficiency()), ratio(sk.up.efficiency(), sb.up.efficiency()),
			ratio(sk.peakRSSMiB, sb.peakRSSMiB), target(proto))
	}
	w.Flush()
	fmt.Println()
	fmt.Println("targets: the field's best published client (shared/reference/benchmarks.md) against sing-box on a 2-vCPU host;")
	fmt.Println("         higher throughput and efficiency ratios are better, a lower memory ratio is better. The VLESS target")
	fmt.Println("         is for VLESS without WebSocket; VLESS+WS+TLS costs more per byte. Not covered here: loss, latency,")
	fmt.Println("         UDP throughput, many-connection memory, and a real network between client and server.")
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func target(proto string) string {
	switch proto {
	case "hysteria2":
		return "≥1.56x / ≥1.71x / ≤0.26x"
	case "vless-ws", "vless-tcp":
		return "≥1.08x / ≥0.83x / ≤0.45x"
	}
	return "-"
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return fmt.Sprintf("%.0f GiB RAM", kb/1024/1024)
		}
	}
	return "? RAM"
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// skiffRevision is the repository's commit (with +dirty when the tree has
// changes), which is what test/bin/skiff was built from.
func skiffRevision(skiffBin string) string {
	repo := filepath.Dir(filepath.Dir(filepath.Dir(skiffBin)))
	rev, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	s := strings.TrimSpace(string(rev))
	if out, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
		s += "+dirty"
	}
	return s
}
