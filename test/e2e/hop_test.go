package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/failover"
	"github.com/skiffvpn/skiff/test/harness"
)

// Port hopping test settings: the server's port range, redirected to its
// listen port by nftables in the server namespace, and the hop interval
// (the client's minimum).
const (
	hopLo, hopHi = 20000, 20009
	hopListen    = 4443
	hopInterval  = 5 * time.Second
)

// TestHysteria2PortHopping runs a sing-box Hysteria2 server behind a
// redirected UDP port range in a server namespace, and skiff in a client
// namespace with a node imported from a sing-box configuration that lists
// the range and a 5 s hop_interval. One TCP stream through skiff's SOCKS5
// proxy echoes data for more than three hop intervals; the test checks
// that every byte came back intact on that one stream, and that the
// server's nftables per-port counters saw packets on at least two ports of
// the range.
func TestHysteria2PortHopping(t *testing.T) {
	if !failover.Root() {
		t.Skip("needs root for network namespaces and nftables")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft")
	}
	topo := failover.NewTopology(t)
	srv := newServer(t, setup{kind: harness.Hysteria2})
	srv.Port = hopListen

	// nftables in the server namespace: count each port of the range
	// (before NAT, so every packet), then redirect the range to sing-box.
	var rules strings.Builder
	fmt.Fprintf(&rules, "table inet skiffhop {\n chain count {\n  type filter hook prerouting priority raw; policy accept;\n")
	for p := hopLo; p <= hopHi; p++ {
		fmt.Fprintf(&rules, "  udp dport %d counter\n", p)
	}
	fmt.Fprintf(&rules, " }\n chain nat {\n  type nat hook prerouting priority dstnat; policy accept;\n")
	fmt.Fprintf(&rules, "  udp dport %d-%d redirect to :%d\n }\n}\n", hopLo, hopHi, hopListen)
	if err := failover.RunInput(rules.String(), "ip", failover.Exec(topo.Server, "nft", "-f", "-")...); err != nil {
		t.Fatal(err)
	}

	// The echo origin, in the server namespace.
	var echo *harness.TCPServer
	if err := failover.InNS(topo.Server, func() (err error) {
		echo, err = harness.ServeTCP(harness.EchoTCP)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })

	// sing-box, listening on the server's veth address.
	raw, err := srv.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["inbounds"].([]any)[0].(map[string]any)["listen"] = topo.ServerIP.String()
	dir := t.TempDir()
	serverCfg := filepath.Join(dir, "server.json")
	if err := failover.WriteJSON(serverCfg, cfg); err != nil {
		t.Fatal(err)
	}
	sb := harness.Start(t, "sing-box-server", "ip", failover.Exec(topo.Server, harness.NeedSingBox(t), "run", "--disable-color", "-c", serverCfg)...)
	waitText(t, sb, "sing-box started")

	// The client node, as a sing-box configuration imported into a
	// profile: the hop interval travels in hop_interval.
	out := srv.ClientOutbound()
	out["tag"] = "hop"
	out["server"] = topo.ServerIP.String()
	delete(out, "server_port")
	out["server_ports"] = []string{fmt.Sprintf("%d:%d", hopLo, hopHi)}
	out["hop_interval"] = hopInterval.String()
	out["tls"].(map[string]any)["insecure"] = true
	subFile := filepath.Join(dir, "sub.json")
	if err := failover.WriteJSON(subFile, map[string]any{"outbounds": []any{out}}); err != nil {
		t.Fatal(err)
	}
	bin := harness.NeedSkiff(t)
	confDir := filepath.Join(dir, "profile")
	if b, err := exec.Command(bin, "import", "--config-dir", confDir, subFile).CombinedOutput(); err != nil {
		t.Fatalf("skiff import: %v: %s", err, b)
	}
	const listen = "127.0.0.1:1080" // the client namespace is ours alone
	sk := harness.Start(t, "skiff", "ip", failover.Exec(topo.Client, bin,
		"run", "--node", "hop", "--config-dir", confDir, "--listen", listen)...)
	waitText(t, sk, "skiff: listening on")

	// One stream, echoing for more than three hop intervals.
	var conn net.Conn
	target := echo.Addr() // loopback of the server namespace: only sing-box reaches it
	if err := failover.InNS(topo.Client, func() (err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		conn, err = harness.DialSOCKS(ctx, listen, target)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	chunk := make([]byte, 64<<10)
	got := make([]byte, len(chunk))
	var sent int64
	start := time.Now()
	for time.Since(start) < 3*hopInterval+3*time.Second {
		rand.Read(chunk)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(chunk); err != nil {
			t.Fatalf("after %d bytes (%v): write: %v", sent, time.Since(start).Round(time.Millisecond), err)
		}
		if _, err := io.ReadFull(conn, got); err != nil {
			t.Fatalf("after %d bytes (%v): read: %v", sent, time.Since(start).Round(time.Millisecond), err)
		}
		if !bytes.Equal(got, chunk) {
			t.Fatalf("after %d bytes: echo differs", sent)
		}
		sent += int64(len(chunk))
		time.Sleep(20 * time.Millisecond) // a steady stream, not a benchmark
	}

	counts := portCounters(t, topo.Server)
	used := 0
	for p := hopLo; p <= hopHi; p++ {
		if counts[p] > 0 {
			used++
		}
	}
	t.Logf("%d bytes echoed on one stream in %v; packets per port: %v", sent, time.Since(start).Round(time.Millisecond), counts)
	if used < 2 {
		t.Errorf("packets arrived on %d port(s) of %d-%d, want at least 2", used, hopLo, hopHi)
	}
}

var counterRE = regexp.MustCompile(`udp dport (\d+) counter packets (\d+)`)

// portCounters reads the per-port packet counters of the server namespace.
func portCounters(t *testing.T, ns string) map[int]int64 {
	t.Helper()
	b, err := exec.Command("ip", failover.Exec(ns, "nft", "list", "chain", "inet", "skiffhop", "count")...).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list: %v: %s", err, b)
	}
	counts := map[int]int64{}
	for _, m := range counterRE.FindAllStringSubmatch(string(b), -1) {
		p, _ := strconv.Atoi(m[1])
		n, _ := strconv.ParseInt(m[2], 10, 64)
		counts[p] = n
	}
	return counts
}

func waitText(t *testing.T, p *harness.Process, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, s); err != nil {
		t.Fatal(err)
	}
}
