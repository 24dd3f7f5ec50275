// Command xhttpbench measures skiff against Xray as the XHTTP client (sing-box
// has no XHTTP), both talking to the same Xray XHTTP server on loopback, one
// client at a time: 16 concurrent TCP streams through the client's SOCKS5
// to a sink/source, download and upload measured separately, -runs runs
// each with the median, the clients taking turns run by run. It reports
// throughput, Mbps per core the client process used, and the client's peak
// RSS, per mode, with skiff/Xray ratios. skiff runs as `skiff run`.
//
// Run it from test/: go run ./cmd/xhttpbench [-modes stream-up,…] [-reality]
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

func main() {
	modes := flag.String("modes", "packet-up,stream-up,stream-one", "XHTTP modes to measure")
	reality := flag.Bool("reality", false, "REALITY instead of TLS")
	runs := flag.Int("runs", 3, "runs per direction; the median is reported")
	dur := flag.Duration("duration", 5*time.Second, "measured time per direction per run")
	warm := flag.Duration("warmup", 2*time.Second, "warm-up transfer before a client's runs")
	streams := flag.Int("streams", 16, "concurrent TCP streams")
	flag.Parse()
	if err := run(strings.Split(*modes, ","), *reality, *runs, *dur, *warm, *streams); err != nil {
		fmt.Fprintln(os.Stderr, "xhttpbench:", err)
		os.Exit(1)
	}
}

type client struct {
	name string
	p    *harness.Process
	load measure.Load
	down measure.Figures
	up   measure.Figures
	rss  float64
	err  error
}

func run(modes []string, reality bool, runs int, dur, warm time.Duration, streams int) error {
	skiffBin, err := harness.SkiffBinary()
	if err != nil {
		return err
	}
	xrayBin, err := harness.XrayBinary()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "skiff-xhttpbench-")
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
	measure.PrintMachine(os.Stdout, "XHTTP: skiff vs Xray as the client", skiffBin)
	sec := "tls"
	if reality {
		sec = "reality"
	}
	fmt.Printf("\n%d streams, %v per direction, %d runs (medians), Xray %s server, %s, h2\n\n", streams, dur, runs, harness.XrayVersion, sec)
	fmt.Printf("| mode | client | down Mbps | up Mbps | down Mbps/core | up Mbps/core | peak RSS MiB |\n|---|---|---|---|---|---|---|\n")
	for _, mode := range modes {
		cs, err := benchMode(mode, reality, runs, dur, warm, streams, skiffBin, xrayBin, dir, cert, sink.Addr())
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		for _, c := range cs {
			if c.err != nil {
				fmt.Printf("| %s | %s | error: %v | | | | |\n", mode, c.name, c.err)
				continue
			}
			fmt.Printf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.1f |\n", mode, c.name,
				c.down.MedianMbps(), c.up.MedianMbps(), c.down.Efficiency(), c.up.Efficiency(), c.rss)
		}
		if len(cs) == 2 && cs[0].err == nil && cs[1].err == nil {
			s, x := cs[0], cs[1]
			fmt.Printf("| %s | skiff/Xray | %.2f | %.2f | %.2f | %.2f | %.2f |\n", mode,
				measure.Ratio(s.down.MedianMbps(), x.down.MedianMbps()), measure.Ratio(s.up.MedianMbps(), x.up.MedianMbps()),
				measure.Ratio(s.down.Efficiency(), x.down.Efficiency()), measure.Ratio(s.up.Efficiency(), x.up.Efficiency()),
				measure.Ratio(s.rss, x.rss))
		}
	}
	return nil
}

func benchMode(mode string, reality bool, runs int, dur, warm time.Duration, streams int, skiffBin, xrayBin, dir string, cert *harness.Cert, sink string) ([]*client, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	kind := harness.VLESSTCP
	if reality {
		kind = harness.VLESSReality
	}
	s := &harness.Server{Kind: kind, Port: port, Cert: cert, UUID: newUUID()}
	if reality {
		keys, err := harness.NewRealityKeys()
		if err != nil {
			return nil, err
		}
		site, err := harness.StartTLSSite(cert)
		if err != nil {
			return nil, err
		}
		defer site.Close()
		s.Reality, s.ShortID, s.Site = keys, "ab12cd34", site
	}
	srvCfg, err := serverConfig(s)
	if err != nil {
		return nil, err
	}
	server, err := startXray(xrayBin, dir, "server-"+mode, srvCfg)
	if err != nil {
		return nil, err
	}
	defer server.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = harness.WaitTCP(ctx, s.Addr())
	cancel()
	if err != nil {
		return nil, err
	}

	cs := []*client{{name: "skiff"}, {name: "xray"}}
	for _, c := range cs {
		var proxy string
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if c.name == "skiff" {
			c.p, proxy, err = harness.StartSkiffRun(ctx, skiffBin, []string{xhttpLink(s, mode)})
		} else {
			c.p, proxy, err = startXrayClient(ctx, xrayBin, dir, s, mode)
		}
		cancel()
		if err != nil {
			c.err = err
			continue
		}
		defer c.p.Stop()
		c.load = measure.Load{
			Dial:      func(ctx context.Context) (net.Conn, error) { return harness.DialSOCKS(ctx, proxy, sink) },
			Dir:       harness.SinkDownload,
			Streams:   streams,
			Duration:  warm,
			ClientPid: c.p.Pid(),
			ServerPid: server.Pid(),
		}
		if _, err := c.load.Run(); err != nil {
			c.err = fmt.Errorf("warm-up: %w\n%s", err, c.p.Output())
		}
	}
	for i := 0; i < runs; i++ {
		for _, dirn := range []byte{harness.SinkDownload, harness.SinkUpload} {
			for _, c := range cs {
				if c.err != nil {
					continue
				}
				l := c.load
				l.Dir, l.Duration = dirn, dur
				m, err := l.Run()
				if err != nil {
					c.err = fmt.Errorf("run %d: %w", i+1, err)
					continue
				}
				if dirn == harness.SinkDownload {
					c.down.Add(m)
				} else {
					c.up.Add(m)
				}
				fmt.Fprintf(os.Stderr, "%s via %s run %d dir %c: %.0f Mbps, %.2f cores\n", mode, c.name, i+1, dirn, m.Mbps, m.ClientCores)
			}
		}
	}
	for _, c := range cs {
		if c.err == nil {
			c.rss, c.err = measure.MemMiB(c.p.Pid(), "VmHWM")
		}
	}
	return cs, nil
}

// serverConfig is s's Xray configuration with XHTTP (mode auto) at /xh.
func serverConfig(s *harness.Server) ([]byte, error) {
	b, err := s.XrayConfig()
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, err
	}
	st := cfg["inbounds"].([]any)[0].(map[string]any)["streamSettings"].(map[string]any)
	st["network"] = "xhttp"
	st["xhttpSettings"] = map[string]any{"path": "/xh", "mode": "auto"}
	if tls, ok := st["tlsSettings"].(map[string]any); ok {
		tls["alpn"] = []string{"h2", "http/1.1"}
	}
	return json.Marshal(cfg)
}

func xhttpLink(s *harness.Server, mode string) string {
	u, _ := url.Parse(s.Link(s.Trusting()))
	q := u.Query()
	q.Set("type", "xhttp")
	q.Set("path", "/xh")
	q.Set("mode", mode)
	q.Del("headerType")
	u.RawQuery = q.Encode()
	return u.String()
}

// startXrayClient runs Xray with a SOCKS5 inbound and a VLESS XHTTP
// outbound to s in mode.
func startXrayClient(ctx context.Context, bin, dir string, s *harness.Server, mode string) (*harness.Process, string, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, "", err
	}
	stream := map[string]any{"network": "xhttp", "xhttpSettings": map[string]any{"path": "/xh", "mode": mode}}
	if s.Kind == harness.VLESSReality {
		stream["security"] = "reality"
		stream["realitySettings"] = map[string]any{"serverName": "localhost", "fingerprint": "chrome",
			"publicKey": s.Reality.Public, "shortId": s.ShortID}
	} else {
		stream["security"] = "tls"
		stream["tlsSettings"] = map[string]any{"serverName": "localhost", "pinnedPeerCertSha256": s.Cert.PinSHA256, "alpn": []string{"h2"}}
	}
	cfg := map[string]any{
		"log":      map[string]any{"loglevel": "warning"},
		"inbounds": []any{map[string]any{"listen": "127.0.0.1", "port": port, "protocol": "socks", "settings": map[string]any{"udp": false}}},
		"outbounds": []any{map[string]any{"protocol": "vless", "streamSettings": stream,
			"settings": map[string]any{"vnext": []any{map[string]any{"address": "127.0.0.1", "port": s.Port,
				"users": []any{map[string]any{"id": s.UUID, "encryption": "none"}}}}}}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, "", err
	}
	p, err := startXray(bin, dir, "client-"+mode, b)
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := harness.WaitTCP(ctx, addr); err != nil {
		p.Stop()
		return nil, "", fmt.Errorf("%w\n%s", err, p.Output())
	}
	return p, addr, nil
}

func startXray(bin, dir, name string, cfg []byte) (*harness.Process, error) {
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, err
	}
	p, err := harness.StartProcess("xray-"+name, bin, "run", "-c", path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, " started"); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s: %w\n%s", name, err, p.Output())
	}
	return p, nil
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
