package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/app/sysproxy"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/dns"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/inbound/mixed"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/internal/procs"
	"github.com/skiffvpn/skiff/tun"
)

// systemProxy is this user's system proxy, recorded in the profile's
// directory (dir, else the default).
func systemProxy(dir string) (*sysproxy.Proxy, error) {
	if dir == "" {
		d, err := profile.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return sysproxy.New(dir), nil
}

// links collects repeated --link flags.
type links []string

func (l *links) String() string     { return fmt.Sprintf("%d link(s)", len(*l)) }
func (l *links) Set(s string) error { *l = append(*l, s); return nil }

// runFlags is what `skiff run` was asked to do.
type runFlags struct {
	nodes     []*node.Node
	listen    string
	allowLAN  bool
	pprof     string
	level     slog.Level
	probeURL  string
	speedURL  string
	lanDirect bool
	tun       tunFlags
	// base is the run the profile plans for a single --node (its group
	// type, rules and final target); nil with --link or several --node.
	base     *core.Config
	probeSet bool // --probe-url was given
	speedSet bool // --speed-url was given
	// systemProxy points the desktop's proxy settings at the local proxy
	// while the run lasts; configDir is where they are recorded.
	systemProxy bool
	configDir   string
	auth        *mixed.Auth // the profile's settings.proxy credentials; nil: none
}

// parseRunFlags parses the arguments of `skiff run`. Errors name the flag
// (and for a link its position and field), never a link's secrets.
func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	fs := newFlags("run", stderr, "usage: skiff run --link URI|--node NAME [--link URI|--node NAME …] [--listen 127.0.0.1:1080] [--pprof 127.0.0.1:6060] [--log-level info] [--probe-url URL] [--lan-direct] [--tun]")
	var (
		ls, saved links
		rf        runFlags
		level     string
		configDir string
	)
	fs.Var(&ls, "link", "a server's share `LINK` (hysteria2://, vless://, …); repeat for failover order")
	fs.Var(&saved, "node", "the `NAME` or ID of a saved node or group (skiff nodes lists them): run as the profile plans it (group type, rules); repeat for a failover group of nodes, after any --link")
	fs.StringVar(&configDir, "config-dir", "", "where the saved profile is (default $SKIFF_CONFIG_DIR or the OS config dir)")
	fs.BoolVar(&rf.systemProxy, "system-proxy", false, "point this desktop session's proxy settings (GNOME, KDE, new shells; Windows, macOS) at the local proxy until the run ends")
	fs.StringVar(&rf.listen, "listen", core.DefaultListen, "address of the local SOCKS5 and HTTP proxy")
	fs.BoolVar(&rf.allowLAN, "allow-lan", false, "allow a --listen address other than loopback (the proxy asks no credentials unless the profile's settings turn them on: docs/service-access.md)")
	fs.StringVar(&rf.pprof, "pprof", "", "serve net/http/pprof on this loopback address")
	fs.StringVar(&level, "log-level", "info", "debug, info, warn or error (per-flow lines at debug)")
	fs.StringVar(&rf.probeURL, "probe-url", group.DefaultPolicy().ProbeURL, "URL fetched through a server to check its health (with several --link)")
	fs.StringVar(&rf.speedURL, "speed-url", group.DefaultPolicy().SpeedURL, "URL serving bytes, fetched (up to 1 MiB) through two servers to compare them when the first looks throttled; off: no throttle detection")
	fs.BoolVar(&rf.lanDirect, "lan-direct", false, "send private and LAN destinations direct instead of through the server")
	fs.BoolVar(&rf.tun.on, "tun", false, "also capture all traffic with a TUN device and routes (needs root or CAP_NET_ADMIN)")
	fs.BoolVar(&rf.tun.strict, "tun-strict", true, "with --tun: stop DNS and traffic bound to other interfaces from leaving outside the tunnel")
	fs.BoolVar(&rf.tun.private, "tun-exclude-private", true, "with --tun: keep private and LAN ranges out of the tunnel")
	fs.StringVar(&rf.tun.name, "tun-name", tun.DefaultName, "with --tun: the device's name (Linux, Windows)")
	fs.IntVar(&rf.tun.mtu, "tun-mtu", tun.DefaultMTU, "with --tun: the device's MTU")
	fs.StringVar(&rf.tun.dns, "tun-dns", core.DNSFakeIP, "with --tun: DNS inside the tunnel, fake-ip or real-ip (resolved through the server)")
	fs.BoolVar(&rf.tun.ipv6, "tun-ipv6", true, "with --tun: give the device an IPv6 address and carry IPv6 (off: IPv6 is blocked in strict mode, never leaked)")
	fs.StringVar(&rf.tun.fakeIPRange, "tun-fakeip-range", "", "with --tun: the fake-IP ranges, an IPv4 and/or an IPv6 prefix separated by a comma (default "+dns.DefaultPrefix4.String()+","+dns.DefaultPrefix6.String()+")")
	fs.BoolVar(&rf.tun.killSwitch, "kill-switch", false, "with --tun: block all traffic outside the tunnel, also after skiff stops or dies, until a run without it (or skiff cleanup)")
	fs.BoolVar(&rf.tun.ksAllowLAN, "kill-switch-allow-lan", false, "with --kill-switch: let the LAN (private and link-local ranges) through, DNS excepted")
	fs.StringVar(&rf.tun.dnsUpstream, "tun-dns-upstream", core.DefaultDNSUpstream, "with --tun: the DNS server asked through the proxy (https://host/path, tls://host, tcp://host or udp://host, with optional :port)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		rf.probeSet = rf.probeSet || f.Name == "probe-url"
		rf.speedSet = rf.speedSet || f.Name == "speed-url"
	})
	if err := rf.level.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	if rf.tun.on {
		// Checked here, so that a typo is a usage error (exit 2) before
		// any route changes. Nothing is dialled: no outbound is needed.
		if _, err := dns.NewUpstream(nil, rf.tun.dnsUpstream); err != nil {
			return nil, fmt.Errorf("--tun-dns-upstream: %v", err)
		}
		if rf.tun.fakeIPRange != "" {
			var err error
			if rf.tun.fake4, rf.tun.fake6, err = core.ParseFakeIPRange(rf.tun.fakeIPRange); err != nil {
				return nil, fmt.Errorf("--tun-fakeip-range: %v", err)
			}
		}
	} else if rf.tun.killSwitch {
		return nil, errors.New("--kill-switch: needs --tun")
	}
	rf.configDir = configDir
	if rf.systemProxy && rf.allowLAN {
		return nil, errors.New("--system-proxy: points this machine at a loopback proxy; it does not go with --allow-lan")
	}
	if len(ls)+len(saved) == 0 {
		return nil, errors.New("--link or --node: at least one server is needed")
	}
	for i, s := range ls {
		n, err := link.Parse(s)
		if err != nil {
			// link's errors name the scheme and field, never a secret.
			return nil, fmt.Errorf("--link #%d: %v", i+1, err)
		}
		rf.nodes = append(rf.nodes, n)
	}
	if len(saved) == 1 && len(ls) == 0 {
		// One saved node or group: the profile's own plan for it.
		pl, err := planFor(configDir, saved[0])
		if err != nil {
			return nil, err
		}
		rf.base = &pl.Config
		rf.nodes = pl.Config.Nodes
	} else {
		for _, name := range saved {
			n, err := lookupNodeIn(configDir, name)
			if err != nil {
				return nil, err
			}
			rf.nodes = append(rf.nodes, n)
		}
	}
	if rf.pprof != "" && !isLoopback(rf.pprof) {
		return nil, fmt.Errorf("--pprof: %q is not a loopback address", rf.pprof)
	}
	if err := rf.readProxyAuth(); err != nil {
		return nil, err
	}
	return &rf, nil
}

// readProxyAuth takes the local proxy's credentials from the profile's
// settings (the single --node's plan has them already). System-proxy
// mode refuses them: plan.ErrSystemProxyAuth says why.
func (rf *runFlags) readProxyAuth() error {
	if rf.base == nil {
		store, err := profile.Open(rf.configDir)
		if err != nil {
			if rf.configDir == "" {
				return nil // no config dir (no $HOME): no profile, no settings
			}
			return err
		}
		p, err := store.Load()
		if p == nil {
			return err
		}
		if rf.auth, err = plan.ProxyAuth(p.Settings.Proxy); err != nil {
			return err
		}
	} else {
		rf.auth = rf.base.ProxyAuth
	}
	if rf.auth != nil && rf.systemProxy {
		return fmt.Errorf("--system-proxy: %w", plan.ErrSystemProxyAuth)
	}
	return nil
}

// isLoopback reports whether hostport names a loopback address.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// runGCPercent is the GC target of `skiff run` unless GOGC is set: the heap
// may grow to 1.5x the live heap instead of 2x. Measured with test/cmd/bench
// -quick (skiff-core, 16 streams, 2 runs each, this machine): peak RSS
// 19-20 MiB instead of 21-23 (hysteria2 and vless-ws alike); Mbps per core
// unchanged for vless-ws and 3-8% lower for hysteria2, whose QUIC path
// allocates per packet. GOGC=75 saved about 1 MiB, inside the noise. No
// memory limit: with a fixed limit a flow-heavy session (hundreds of
// connections) would run the GC continuously instead of growing.
const runGCPercent = 50

// runCmd is `skiff run`: the core headless, with the local proxy in front.
func runCmd(args []string, _ io.Reader, _, stderr io.Writer) int {
	rf, err := parseRunFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "skiff run: %v\n", err)
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(runGCPercent)
	}
	ctx, stop := stopContext()
	defer stop()

	c := core.NewController(core.Options{LogOutput: stderr, LogLevel: rf.level})
	log := c.Logger()

	// One P while one is enough (package procs says why).
	defer procs.Start(ctx, procs.DefaultPolicy(), log)()

	if rf.pprof != "" {
		// The heap profile covers what is allocated from here on; the
		// program may have turned the profiler off at its start.
		if runtime.MemProfileRate == 0 {
			runtime.MemProfileRate = defaultMemProfileRate
		}
		srv, err := servePprof(rf.pprof)
		if err != nil {
			fmt.Fprintf(stderr, "skiff run: --pprof: %v\n", err)
			return 1
		}
		defer srv.Close()
		log.Info("pprof listening", "addr", srv.Addr)
	}

	cfg := core.Config{Nodes: rf.nodes}
	if rf.base != nil {
		cfg = *rf.base
	}
	cfg.Listen, cfg.AllowLAN, cfg.ProxyAuth = rf.listen, rf.allowLAN, rf.auth
	if rf.base == nil || rf.probeSet {
		cfg.Policy.ProbeURL = rf.probeURL
	}
	if rf.base == nil || rf.speedSet {
		cfg.Policy.SpeedURL = rf.speedURL
	}
	if rf.lanDirect {
		cfg.Rules, cfg.Final, _ = rule.Builtin(rule.BuiltinTunnelAll, core.TargetProxy, core.TargetDirect, nil)
	}
	if rf.tun.on {
		cfg.TUN = rf.tun.config()
	}
	// A run killed while it had the system proxy on left it pointing at a
	// dead port: put it back first, whatever this run does.
	sp, err := systemProxy(rf.configDir)
	if err == nil {
		if restored, rerr := sp.Recover(ctx); rerr != nil {
			fmt.Fprintf(stderr, "skiff run: %v\n", rerr)
		} else if restored {
			fmt.Fprintln(stderr, "skiff: restored the system proxy settings an earlier run left")
		}
	} else if rf.systemProxy {
		fmt.Fprintf(stderr, "skiff run: --system-proxy: %v\n", err)
		return 1
	}
	if err := c.Start(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "skiff run: %v\n", err)
		return 1
	}
	if name := c.Status().TUN; name != "" {
		fmt.Fprintf(stderr, "skiff: TUN %s up\n", name)
	}
	fmt.Fprintf(stderr, "skiff: listening on %s\n", c.Status().Listen)
	if rf.systemProxy {
		addr, _ := netip.ParseAddrPort(c.Status().Listen)
		names, err := sp.Enable(ctx, sysproxy.Config{Addr: addr})
		if err != nil {
			fmt.Fprintf(stderr, "skiff run: --system-proxy: %v\n", err)
			c.Stop()
			return 1
		}
		fmt.Fprintf(stderr, "skiff: system proxy set (%s); new shells read %s\n", strings.Join(names, ", "), sysproxy.EnvHook(filepath.Dir(sp.StatePath())))
		defer func() {
			if err := sp.Disable(context.Background()); err != nil {
				fmt.Fprintf(stderr, "skiff run: %v\n", err)
			} else {
				fmt.Fprintln(stderr, "skiff: system proxy settings restored")
			}
		}()
	}

	<-ctx.Done()
	stop() // a second signal now ends the process at once
	log.Info("signal received, stopping")
	if err := c.Stop(); err != nil {
		fmt.Fprintf(stderr, "skiff run: stop: %v\n", err)
		return 1
	}
	return 0
}

// defaultMemProfileRate is the Go runtime's default runtime.MemProfileRate.
const defaultMemProfileRate = 512 << 10

// servePprof serves the runtime profiles on addr, a loopback address, on a
// mux of its own (not http.DefaultServeMux).
func servePprof(addr string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, nil
}
