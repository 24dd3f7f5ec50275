package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// result is one client's throughput figures for one protocol.
type result struct {
	protocol, client string
	down, up         figures
	peakRSSMiB       float64 // highest VmHWM over the runs
	profile          string  // skiff's CPU profile of the first download run; "" none
	err              error   // the client could not be measured
}

// figures are the runs of one direction.
type figures struct {
	mbps        []float64
	clientCores []float64
	serverCores []float64
}

func (f *figures) add(m loadResult) {
	f.mbps = append(f.mbps, m.Mbps)
	f.clientCores = append(f.clientCores, m.ClientCores)
	f.serverCores = append(f.serverCores, m.ServerCores)
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

// connResult is one client's many-connection figures for one protocol.
type connResult struct {
	protocol, client string
	n                int
	open             connsResult
	alive            int     // still answering after the hold
	baseMiB          float64 // RSS before
	openMiB          float64 // RSS with all open
	peakMiB          float64 // VmHWM after they closed
	idleMiB          float64 // RSS idle-wait after they closed
	err              error
}

func printHeader(o options, skiffBin string, skiffTUN bool) {
	fmt.Println("# skiff TUN-mode benchmark")
	fmt.Println()
	fmt.Printf("date:      %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("machine:   %s, %d logical CPUs, %s, Linux %s\n", cpuModel(), runtime.NumCPU(), memTotal(), kernel())
	fmt.Printf("versions:  skiff %s (%s), sing-box %s, %s\n", skiffRevision(skiffBin), filepath.Base(skiffBin), harness.SingBoxVersion, runtime.Version())
	sink := sinkIP4
	if o.ipv6 {
		sink = sinkIP6
	}
	fmt.Printf("settings:  %d TCP streams from the client namespace to the sink/source at %s, through the client's TUN;\n", o.streams, sink)
	fmt.Printf("           %v per direction after a %v warm-up; %d run(s), median; the clients take turns, a fresh process per run\n", o.duration, o.warmup, o.runs)
	fmt.Println("           clients: skiff run --tun (defaults: auto-route, strict route, MTU 9000, its gVisor netstack);")
	fmt.Println("                    sing-box tun inbound, stack gvisor, auto_route, MTU 9000, route_exclude_address = server")
	fmt.Println("           server: sing-box", harness.SingBoxVersion, "in its own namespace over a veth pair, self-signed ECDSA P-256 certificate;")
	fmt.Println("                   Hysteria2 without bandwidth hints (BBR both ways), VLESS over WebSocket over TLS 1.3")
	if o.conns > 0 {
		fmt.Printf("           many connections: %d concurrent TCP connections to an echo server through the TUN, one round\n", o.conns)
		fmt.Printf("           trip each, held 3 s, checked again, closed; idle RSS read %v after they closed (fresh client)\n", o.idleWait)
	}
	if !skiffTUN {
		fmt.Println("skiff:     TUN mode NOT AVAILABLE in this build (`skiff run -h` has no --tun); only sing-box measured")
	}
	fmt.Println("note:      all processes (server, sink, client, load generator) share this machine's", runtime.NumCPU(), "cores, so the")
	fmt.Println("           absolute figures are far below a real two-host setup; compare the skiff/sing-box ratios of one run.")
	fmt.Println()
}

func printResults(o options, rs []result, cs []connResult, skiffTUN bool) {
	if len(rs) > 0 {
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

		fmt.Println("ratios skiff / sing-box, TUN mode (this run):")
		w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "protocol\tdown throughput\tup throughput\tdown efficiency\tup efficiency\tpeak memory\ttargets met (≥1.0x / ≥1.3x / ≤0.5x)\t")
		for _, proto := range o.protocols {
			sk, sb := find(rs, proto, "skiff"), find(rs, proto, "sing-box")
			if sk == nil || sb == nil || sk.err != nil || sb.err != nil {
				continue
			}
			td := ratio(sk.down.medianMbps(), sb.down.medianMbps())
			tu := ratio(sk.up.medianMbps(), sb.up.medianMbps())
			ed := ratio(sk.down.efficiency(), sb.down.efficiency())
			eu := ratio(sk.up.efficiency(), sb.up.efficiency())
			mem := ratio(sk.peakRSSMiB, sb.peakRSSMiB)
			fmt.Fprintf(w, "%s\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%s / %s / %s\t\n", proto, td, tu, ed, eu, mem,
				yes(td >= 1 && tu >= 1), yes(ed >= 1.3 && eu >= 1.3), yes(mem <= 0.5))
		}
		w.Flush()
		if !skiffTUN {
			fmt.Println("(no ratios: skiff's TUN mode is not available in this build)")
		}
		fmt.Println()
		fmt.Println("targets (issue 3): throughput ≥ sing-box's, efficiency (Mbps per client core) ≥ 1.3x, peak RSS ≤ 0.5x.")
		fmt.Println()
	}

	if len(cs) > 0 {
		fmt.Printf("many connections through the TUN (RSS of the client, MiB):\n")
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "protocol\tclient\tconnections ok\tsetup s\talive after hold\tRSS before\tRSS open\tpeak RSS\tidle RSS\tidle - before\t")
		for _, c := range cs {
			if c.err != nil {
				fmt.Fprintf(w, "%s\t%s\tfailed\t-\t-\t-\t-\t-\t-\t-\t\n", c.protocol, c.client)
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%d/%d\t%.1f\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%+.1f\t\n", c.protocol, c.client, c.open.OK, c.n, c.open.Seconds,
				c.alive, c.baseMiB, c.openMiB, c.peakMiB, c.idleMiB, c.idleMiB-c.baseMiB)
		}
		w.Flush()
		for _, c := range cs {
			if c.err != nil {
				fmt.Printf("%s via %s, %d connections failed: %s\n", c.protocol, c.client, c.n, c.err)
			} else if c.open.Failed > 0 {
				fmt.Printf("%s via %s: %d of %d connections failed, first: %s\n", c.protocol, c.client, c.open.Failed, c.n, c.open.FirstErr)
			}
		}
		fmt.Println()
	}

	for _, r := range rs {
		if r.profile == "" {
			continue
		}
		fmt.Printf("CPU profile of skiff, %s download (%s):\n", r.protocol, r.profile)
		for _, view := range [][]string{{"-top", "-nodecount=25"}, {"-top", "-cum", "-nodecount=40"}} {
			out, err := exec.Command("go", append(append([]string{"tool", "pprof"}, view...), r.profile)...).CombinedOutput()
			if err != nil {
				fmt.Printf("go tool pprof: %v\n", err)
			}
			fmt.Println(string(out))
		}
	}
}

func find(rs []result, proto, client string) *result {
	for i := range rs {
		if rs[i].protocol == proto && rs[i].client == client {
			return &rs[i]
		}
	}
	return nil
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
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

// clockTicks is USER_HZ, the unit of utime and stime in /proc (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// cpuSeconds returns utime+stime of pid from /proc/PID/stat (0 for pid 0
// or a process that is gone).
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
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

// memMiB returns a field of /proc/PID/status (VmRSS, VmHWM) in MiB.
func memMiB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
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
