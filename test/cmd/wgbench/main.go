// Command wgbench measures skiff's WireGuard outbound in proxy mode
// (`skiff run`) against the in-process test peer (harness.StartWireGuardPeer:
// wireguard-go on its own netstack, reserved bytes both ways): 16 TCP
// streams through skiff's SOCKS5 to a sink/source on the peer's stack, each
// direction -runs times for -duration, with the medians of throughput and
// of Mbps per core skiff used, and skiff's peak RSS; then a fresh skiff
// carrying -conns connections to an echo on the peer's stack, -conn-size
// bytes each way at once (measure.Conns), with skiff's RSS at each phase
// and its peak.
//
// The peer runs in this process, so its CPU is not skiff's. There is no
// reference client: sing-box v1.14.1 with with_wireguard needs
// github.com/sagernet/wireguard-go v0.0.6, which the module proxy here
// refuses (403). Not a timed test, not part of CI:
//
//	go run ./cmd/wgbench -runs 3 -duration 10s -conns 500
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

func main() {
	runs := flag.Int("runs", 3, "runs per direction")
	duration := flag.Duration("duration", 10*time.Second, "measured window of each run")
	conns := flag.Int("conns", 500, "many-connection phase: connections (0: none)")
	connSize := flag.Int("conn-size", 256<<10, "many-connection phase: bytes each way per connection")
	hold := flag.Duration("hold", 5*time.Second, "many-connection phase: held open and idle for")
	idle := flag.Duration("idle-wait", 5*time.Second, "many-connection phase: idle after closing for")
	flag.Parse()
	if err := run(*runs, *duration, *conns, *connSize, *hold, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "wgbench:", err)
		os.Exit(1)
	}
}

const (
	sinkAddr = harness.WireGuardPeerIP + ":9"
	echoAddr = harness.WireGuardPeerIP + ":7"
)

func run(runs int, duration time.Duration, nConns, connSize int, hold, idle time.Duration) error {
	bin, err := harness.SkiffBinary()
	if err != nil {
		return err
	}
	clientPriv, clientPub, err := harness.WireGuardKeyPair()
	if err != nil {
		return err
	}
	peerPriv, peerPub, err := harness.WireGuardKeyPair()
	if err != nil {
		return err
	}
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	cfg := harness.WireGuardPeerConfig{Priv: peerPriv, ClientPub: clientPub, Port: port,
		ToClient: [3]byte{9, 8, 7}, FromClient: [3]byte{168, 26, 21},
		TCP: map[int]func(net.Conn){9: harness.SinkSource, 7: harness.EchoTCP}}
	peer, err := harness.StartWireGuardPeer(cfg)
	if err != nil {
		return err
	}
	defer peer.Stop()
	link := harness.WireGuardLink(cfg, clientPriv, peerPub)
	measure.PrintMachine(os.Stdout, "WireGuard through skiff run (proxy mode), peer in the bench process", bin)

	p, proxy, err := start(bin, link)
	if err != nil {
		return err
	}
	dial := func(target string) func(ctx context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) { return harness.DialSOCKS(ctx, proxy, target) }
	}
	for _, dir := range []byte{harness.SinkDownload, harness.SinkUpload} {
		var mbps, perCore []float64
		for range runs {
			s, err := measure.Load{Dial: dial(sinkAddr), Dir: dir, Streams: 16, Duration: duration, ClientPid: p.Pid()}.Run()
			if err != nil {
				p.Stop()
				return err
			}
			mbps = append(mbps, s.Mbps)
			perCore = append(perCore, s.Mbps/s.ClientCores)
		}
		name := "download"
		if dir == harness.SinkUpload {
			name = "upload"
		}
		fmt.Printf("16 streams %-8s  median %7.0f Mbit/s  %7.0f Mbit/s per core (runs: %.0f)\n", name, measure.Median(mbps), measure.Median(perCore), mbps)
	}
	hwm, _ := measure.MemMiB(p.Pid(), "VmHWM")
	fmt.Printf("16 streams: skiff peak RSS %.1f MiB\n", hwm)
	p.Stop()

	if nConns <= 0 {
		return nil
	}
	p, proxy, err = start(bin, link)
	if err != nil {
		return err
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := measure.Conns{Dial: dial(echoAddr), N: nConns, Size: connSize, Hold: hold, Idle: idle}.Run(ctx, func(phase string) {
		rss, _ := measure.MemMiB(p.Pid(), "VmRSS")
		fmt.Printf("%d connections, %-6s  skiff RSS %.1f MiB\n", nConns, phase, rss)
	})
	if err != nil {
		return err
	}
	hwm, _ = measure.MemMiB(p.Pid(), "VmHWM")
	fmt.Printf("%d connections: %d ok, %d failed (%s), %.1f s; skiff peak RSS %.1f MiB\n", nConns, out.OK, out.Failed, out.FirstErr, out.Seconds, hwm)
	return nil
}

func start(bin, link string) (*harness.Process, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return harness.StartSkiffRun(ctx, bin, []string{link})
}
