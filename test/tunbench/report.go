package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"text/tabwriter"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

// result is one client's throughput figures for one protocol.
type result struct {
	measure.Result        // PeakRSSMiB is the highest VmHWM over the runs
	profile        string // skiff's CPU profile of the first run of profileDir; "" none
	profileDir     string // "download" or "upload"
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
	measure.PrintMachine(os.Stdout, "skiff TUN-mode benchmark", skiffBin)
	sink := sinkIP4
	if o.ipv6 {
		sink = sinkIP6
	}
	fmt.Printf("settings:  %d TCP streams from the client namespace to the sink/source at %s, through the client's TUN;\n", o.Streams, sink)
	fmt.Printf("           %v per direction after a %v warm-up; %d run(s), median; the clients take turns, a fresh process per run\n", o.Duration, o.Warmup, o.Runs)
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
		base := make([]measure.Result, len(rs))
		for i := range rs {
			base[i] = rs[i].Result
		}
		measure.PrintTable(os.Stdout, base)
		measure.PrintRatios(os.Stdout, "ratios skiff / sing-box, TUN mode (this run):", base, o.Protocols, "targets met (≥1.0x / ≥1.3x / ≤0.5x)",
			func(_ string, r measure.Ratios) string {
				return yes(r.DownMbps >= 1 && r.UpMbps >= 1) + " / " + yes(r.DownEfficiency >= 1.3 && r.UpEfficiency >= 1.3) + " / " + yes(r.PeakRSS <= 0.5)
			})
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
		fmt.Printf("CPU profile of skiff, %s, first %s run (%s):\n", r.Protocol, r.profileDir, r.profile)
		for _, view := range [][]string{{"-top", "-nodecount=25"}, {"-top", "-cum", "-nodecount=40"}} {
			out, err := exec.Command("go", append(append([]string{"tool", "pprof"}, view...), r.profile)...).CombinedOutput()
			if err != nil {
				fmt.Printf("go tool pprof: %v\n", err)
			}
			fmt.Println(string(out))
		}
	}
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
