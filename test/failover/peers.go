package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// Ports inside the namespaces (they are this package's own, so fixed
// numbers cannot collide with anything).
const (
	Hy2Port     = 8443 // Hysteria2, UDP, on Topology.ServerIP
	VLESSPort   = 8444 // VLESS+WS+TLS, TCP, on Topology.ServerIP
	SkiffPort   = 1080 // skiff's SOCKS5/HTTP proxy on 127.0.0.1 in the client namespace
	SingBoxPort = 1081 // sing-box's mixed inbound on 127.0.0.1 in the client namespace
)

// Member names as the group and the reports use them.
const (
	Primary  = "hysteria2"
	Fallback = "vless"
)

// Servers are the two sing-box servers in the server namespace, one
// process each so that one can be killed alone.
type Servers struct {
	t     testing.TB // owns the processes
	topo  *Topology
	dir   string
	Hy2   *harness.Server
	VLESS *harness.Server
	procs map[*harness.Server]*harness.Process
	runs  int // processes started, to name restarts apart
}

// StartServers starts the Hysteria2 and the VLESS+WS+TLS servers for t.
func StartServers(t testing.TB, topo *Topology) *Servers {
	t.Helper()
	dir := t.TempDir()
	cert, err := harness.NewCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &Servers{
		t:     t,
		topo:  topo,
		dir:   dir,
		Hy2:   &harness.Server{Kind: harness.Hysteria2, Port: Hy2Port, Cert: cert, Password: "failover-hy2-password"},
		VLESS: &harness.Server{Kind: harness.VLESSWS, Port: VLESSPort, Cert: cert, UUID: "b831381d-6324-4d53-ad4f-8cda48b30811", Path: "/ws"},
		procs: map[*harness.Server]*harness.Process{},
	}
	for _, srv := range []*harness.Server{s.Hy2, s.VLESS} {
		if err := s.Start(srv); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// egress returns the address server's connections to the origin come from.
func (s *Servers) egress(srv *harness.Server) netip.Addr {
	if srv.Kind == harness.Hysteria2 {
		return s.topo.EgressHy2
	}
	return s.topo.EgressVLESS
}

// Start starts srv in the server namespace and waits until it runs. The
// process lives until the cleanup of the test that called StartServers,
// whichever subtest restarts it.
func (s *Servers) Start(srv *harness.Server) error {
	raw, err := srv.ServerConfig()
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	cfg["inbounds"].([]any)[0].(map[string]any)["listen"] = s.topo.ServerIP.String()
	cfg["outbounds"].([]any)[0].(map[string]any)["inet4_bind_address"] = s.egress(srv).String()
	path := filepath.Join(s.dir, string(srv.Kind)+".json")
	if err := WriteJSON(path, cfg); err != nil {
		return err
	}
	bin, err := harness.SingBoxBinary()
	if err != nil {
		return err
	}
	s.runs++
	name := "sing-box-" + string(srv.Kind)
	if s.runs > 2 {
		name += "-" + strconv.Itoa(s.runs-2) // a restart
	}
	p, err := harness.StartProcess(name, "ip", Exec(s.topo.Server, bin, "run", "--disable-color", "-c", path)...)
	if err != nil {
		return err
	}
	s.t.Cleanup(func() {
		p.Stop()
		if s.t.Failed() || os.Getenv("SKIFF_TEST_LOGS") == "1" {
			if path, err := p.SaveOutput(s.t.Name()); err == nil {
				s.t.Logf("output of %s saved to %s", name, path)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "sing-box started"); err != nil {
		return err
	}
	s.procs[srv] = p
	return nil
}

// Kill ends srv's process at once (SIGKILL: no goodbye to its clients).
func (s *Servers) Kill(srv *harness.Server) {
	if p := s.procs[srv]; p != nil {
		p.Kill()
	}
}

// addr returns srv's address on the veth.
func (s *Servers) addr(srv *harness.Server) string {
	return net.JoinHostPort(s.topo.ServerIP.String(), strconv.Itoa(srv.Port))
}

// Links returns the share links of the primary and the fallback, in that
// order, as a skiff user pastes them.
func (s *Servers) Links() []string {
	var out []string
	for _, srv := range []*harness.Server{s.Hy2, s.VLESS} {
		l := srv.Link(srv.Trusting())
		out = append(out, strings.Replace(l, srv.Addr(), s.addr(srv), 1))
	}
	return out
}

// ClientOutbound returns srv as a sing-box client outbound tagged tag.
func (s *Servers) ClientOutbound(srv *harness.Server, tag string) map[string]any {
	out := srv.ClientOutbound()
	out["tag"] = tag
	out["server"] = s.topo.ServerIP.String()
	return out
}

// MemberName maps a group member's name (a link's fragment, a sing-box
// tag) to Primary or Fallback.
func MemberName(name string) string {
	switch {
	case strings.Contains(name, "hysteria2"):
		return Primary
	case strings.Contains(name, "vless"):
		return Fallback
	}
	return name
}

// Skiff is `skiff run` in the client namespace with the servers as its
// failover group.
type Skiff struct {
	*harness.Process
	Proxy string // the SOCKS5 address inside the client namespace; "" with --tun
	Dial  Dialer // how the load reaches the origin: SOCKS5, or directly into the TUN
}

var listeningRE = regexp.MustCompile(`skiff: listening on (\S+)`)

// StartSkiff starts skiff for t with the servers' links in failover order,
// probeURL and extra arguments, at the default level (switches and failed dials are WARN
// lines; per-flow debug lines would fill the captured output in long runs).
func StartSkiff(t testing.TB, topo *Topology, s *Servers, probeURL string, extra ...string) *Skiff {
	t.Helper()
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(SkiffPort))
	args := harness.SkiffRunArgs(listen, s.Links(), append([]string{"--probe-url", probeURL}, extra...)...)
	p := harness.Start(t, "skiff", "ip", Exec(topo.Client, harness.NeedSkiff(t), args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := p.WaitOutput(ctx, listeningRE)
	if err != nil {
		t.Fatal(err)
	}
	return &Skiff{Process: p, Proxy: m[1], Dial: SOCKSDialer(topo.Client, m[1])}
}

// StartSkiffTUN starts `skiff run --tun` for t in the client namespace with
// the servers' links in failover order and probeURL; applications in the
// namespace reach the origin by dialing it (DirectDialer), through the TUN.
//
// The origin's address is private (10.202.0.1), so private ranges are not
// kept out of the tunnel (--tun-exclude-private=false); skiff keeps the
// servers' own addresses out of it itself. strict is --tun-strict; extra
// arguments follow.
//
// skiff writes its route state to /run/skiff/tun-state.json; it runs in a
// mount namespace of its own with a private tmpfs there (unshare -m), so
// that parallel runs, and the machine's own skiff, never share the file.
// The namespace's routes and rules go with the namespace.
func StartSkiffTUN(t testing.TB, topo *Topology, s *Servers, probeURL string, strict bool, extra ...string) *Skiff {
	t.Helper()
	bin := harness.NeedSkiff(t)
	if err := os.MkdirAll("/run/skiff", 0o700); err != nil { // the mount point
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(SkiffPort))
	args := harness.SkiffRunArgs(listen, s.Links(), "--probe-url", probeURL,
		"--tun", "--tun-exclude-private=false", "--tun-strict="+strconv.FormatBool(strict))
	args = append(args, extra...)
	if lv := os.Getenv("FAILOVER_SKIFF_LOG"); lv != "" {
		args = append(args, "--log-level", lv)
	}
	wrap := []string{"unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o mode=0700,size=1m skiff-failover /run/skiff && exec "$@"`, "sh", bin}
	p := harness.Start(t, "skiff-tun", "ip", Exec(topo.Client, wrap[0], append(wrap[1:], args...)...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.WaitOutput(ctx, listeningRE); err != nil {
		t.Fatalf("skiff run --tun did not come up: %v", err)
	}
	if !strings.Contains(p.Output(), "skiff: TUN ") {
		t.Fatalf("skiff run --tun listens but reported no TUN:\n%s", p.Output())
	}
	return &Skiff{Process: p, Dial: DirectDialer(topo.Client)}
}

// Switch is one failover line of skiff's log.
type Switch struct {
	Time     time.Time
	From, To string // Primary, Fallback or "" (none usable)
	Reason   string
}

var switchRE = regexp.MustCompile(`(?m)^time=(\S+) level=WARN msg=failover group=proxy from=("[^"]*"|\S*) to=("[^"]*"|\S*) reason=("(?:[^"\\]|\\.)*"|\S*)`)

// Switches returns the failover lines skiff has logged at or after since.
func (s *Skiff) Switches(since time.Time) []Switch {
	var out []Switch
	for _, m := range switchRE.FindAllStringSubmatch(s.Output(), -1) {
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil || at.Before(since) {
			continue
		}
		out = append(out, Switch{Time: at, From: MemberName(unquote(m[2])), To: MemberName(unquote(m[3])), Reason: unquote(m[4])})
	}
	return out
}

// WaitSwitch waits up to max for a failover line at or after since that
// moves new flows to member, and returns it.
func (s *Skiff) WaitSwitch(since time.Time, to string, max time.Duration) (Switch, bool) {
	deadline := time.Now().Add(max)
	for {
		for _, sw := range s.Switches(since) {
			if sw.To == to {
				return sw, true
			}
		}
		if time.Now().After(deadline) {
			return Switch{}, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// SingBoxClient is sing-box as the client in the client namespace: a mixed
// inbound in front of a urltest group of the two servers.
type SingBoxClient struct {
	*harness.Process
	Dial Dialer
}

// StartSingBoxClient starts sing-box with a urltest outbound over the
// primary and the fallback probing probeURL every interval.
func StartSingBoxClient(t testing.TB, topo *Topology, s *Servers, probeURL string, interval time.Duration) *SingBoxClient {
	t.Helper()
	cfg := map[string]any{
		"log": map[string]any{"level": "info", "timestamp": true},
		"inbounds": []any{map[string]any{
			"type": "mixed", "tag": "mixed", "listen": "127.0.0.1", "listen_port": SingBoxPort,
		}},
		"outbounds": []any{
			map[string]any{"type": "urltest", "tag": "proxy", "outbounds": []string{Primary, Fallback}, "url": probeURL, "interval": interval.String()},
			s.ClientOutbound(s.Hy2, Primary),
			s.ClientOutbound(s.VLESS, Fallback),
		},
		"route": map[string]any{"final": "proxy"},
	}
	path := filepath.Join(t.TempDir(), "sing-box-client.json")
	if err := WriteJSON(path, cfg); err != nil {
		t.Fatal(err)
	}
	p := harness.Start(t, "sing-box-client", "ip", Exec(topo.Client, harness.NeedSingBox(t), "run", "--disable-color", "-c", path)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "sing-box started"); err != nil {
		t.Fatal(err)
	}
	proxy := net.JoinHostPort("127.0.0.1", strconv.Itoa(SingBoxPort))
	return &SingBoxClient{Process: p, Dial: SOCKSDialer(topo.Client, proxy)}
}

// WriteJSON writes v, indented, to path (0600: configurations carry
// secrets).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return os.WriteFile(path, b, 0o600)
}
