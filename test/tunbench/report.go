package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

// result is one client's throughput figures for one protocol.
type result struct {
	measure.Result           // PeakRSSMiB is the highest VmHWM over the runs
	profile        string    // skiff's CPU profile of the first run of profileDir; "" none
	profileDir     string    // "download" or "upload"
	idleMiB        []float64 // skiff service: its RSS before connecting, per run
	windowMiB      []float64 // skiff service: the window's idle RSS as its client, per run
}

func printHeader(o options, skiffBin string, skiffTUN bool) {
	measure.PrintMachine(os.Stdout, "skiff TUN-mode benchmark", skiffBin)
	sink := sinkIP4
	if o.ipv6 {
		sink = sinkIP6
	}
	fmt.Printf("settings:  %d TCP streams from the client namespace to the sink/source at %s, through the client's TUN;\n", o.Streams, sink)
	fmt.Printf("           %v per direction after a %v warm-up; %d run(s), median; the clients take turns, a fresh process per run\n", o.Duration, o.Warmup, o.Runs)
	if o.skiffVia == viaService {
		fmt.Println("           clients: skiff service (root, in the client namespace), connected by `skiff import LINK` and")
		fmt.Println("                    `skiff connect --tun` over its socket (the profile's defaults: strict route, its gVisor netstack);")
		fmt.Println("                    the RSS figures of skiff are the service's")
	} else {
		fmt.Println("           clients: skiff run --tun (defaults: auto-route, strict route, MTU 9000, its gVisor netstack);")
	}
	fmt.Println("                    sing-box tun inbound, stack gvisor, auto_route, MTU 9000, route_exclude_address = server")
	fmt.Println("           server: sing-box", harness.SingBoxVersion, "in its own namespace over a veth pair, self-signed ECDSA P-256 certificate;")
	fmt.Println("                   Hysteria2 without bandwidth hints (BBR both ways), VLESS over WebSocket over TLS 1.3,")
	fmt.Println("                   Shadowsocks 2022 (2022-blake3-aes-128-gcm), Trojan over TLS, VMess aes-128-gcm over TLS and WebSocket+TLS")
	if !skiffTUN {
		fmt.Println("skiff:     TUN mode NOT AVAILABLE in this build (`skiff run -h` has no --tun); only sing-box measured")
	}
	fmt.Println("note:      all processes (server, sink, client, load generator) share this machine's", runtime.NumCPU(), "cores, so the")
	fmt.Println("           absolute figures are far below a real two-host setup; compare the skiff/sing-box ratios of one run.")
	fmt.Println()
}

func printResults(o options, rs []result, cs []measure.ConnsResult, skiffTUN bool) {
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
		for _, r := range rs {
			if len(r.idleMiB) > 0 {
				fmt.Printf("%s: skiff service idle (started, not connected) RSS median %.1f MiB of %d runs %v\n", r.Protocol, measure.Median(r.idleMiB), len(r.idleMiB), r.idleMiB)
			}
			if len(r.windowMiB) > 0 {
				fmt.Printf("%s: the window (skiff-window under Xvfb, a client of the service) idle RSS median %.1f MiB of %d runs %v (target ≤ 80 MiB)\n", r.Protocol, measure.Median(r.windowMiB), len(r.windowMiB), r.windowMiB)
			}
		}
		fmt.Println()
		fmt.Println("targets (issue 3): throughput ≥ sing-box's, efficiency (Mbps per client core) ≥ 1.3x, peak RSS ≤ 0.5x.")
		fmt.Println()
	}

	measure.PrintConns(os.Stdout, fmt.Sprintf("many connections through the TUN: %d connections to an echo server, %d KiB each way at once (busy),\n"+
		"held open and idle %v (held), closed (closed: 2s later), idle %v after closing (idle); fresh client:", o.Conns, o.ConnSize>>10, o.Hold, o.IdleWait), cs)

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
