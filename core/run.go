package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/inbound/mixed"
	"github.com/skiffvpn/skiff/core/netmon"
	"github.com/skiffvpn/skiff/core/netstack"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/process"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/tun"
)

// run is what one Start owns; Stop tears it down.
type run struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stats   *stats.Stats
	inbound *mixed.Server
	routing *routing
	tun     *tunRun // nil unless TUN mode
	panics  *guard.Reporter
	netmon  *netmon.Monitor
	servers map[string]bool // TUN mode: the servers the tunnel lets pass (Reselect keeps to them)
	exit    exitCheck       // where traffic leaves from (Controller.Exit)
	procs   *process.Finder // names the programs of listed connections (connections.go)
}

// tunRun is the TUN half of a run.
type tunRun struct {
	tunnel *tun.Tunnel
	stack  *netstack.Stack
}

// start builds and starts one run; on error it leaves nothing behind.
// It builds in one direction, each part from the ones before it: the
// outbounds' dialer, the outbounds with the router and rule sets
// (buildRouting), the engine over them, the TUN's DNS, then the inbounds
// that hand flows in (the local proxy, the TUN's netstack) and the run's
// loops.
//
// In TUN mode the device and its routes open first, for the dialer: the
// outbounds dial through the tunnel's bypass sockets. No flow comes out of
// the device until its netstack is put on it, last.
func (c *Controller) start(ctx context.Context, cfg Config) (*run, Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, Status{}, fmt.Errorf("core: start: %w", err)
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	r := &run{stats: stats.New(), panics: guard.NewReporter(c.log)}
	// What was built so far is torn down the one way a run ends (close).
	fail := func(err error) (*run, Status, error) {
		r.close()
		return nil, Status{}, err
	}

	// The dialer.
	if cfg.TUN != nil {
		t, err := openTUN(ctx, cfg.TUN, cfg.servers(), c.log)
		if err != nil {
			return nil, Status{}, err
		}
		r.tun = &tunRun{tunnel: t}
		cfg.Dialer = t.Dialer()
		r.servers = map[string]bool{}
		for _, n := range cfg.servers() {
			r.servers[n.Server] = true
		}
	}
	if cfg.Dialer == nil {
		cfg.Dialer = proxyModeDialer()
	}

	// Outbounds, router and rule sets, and the engine over them.
	rt, err := buildRouting(ctx, &cfg, c.onSwitch, c.log)
	if err != nil {
		return fail(err)
	}
	r.routing = rt
	r.procs = rt.procs // the rules' finder and its cache, when they match programs
	if r.procs == nil {
		r.procs = process.New()
	}
	eng := NewEngine(rt.router, r.stats, c.log)
	eng.onDialFail = func(m *flow.Metadata, outbound string, err error) {
		c.events.publish(Event{Time: time.Now(), Kind: EventFlowFailed, Status: c.Status(),
			Message: fmt.Sprintf("%s to %s: %v", outbound, m.Destination, err), Err: err})
	}

	// DNS: the TUN's flows meet the DNS handler in front of the engine.
	var tunFlows flow.Handler
	if r.tun != nil {
		if tunFlows, err = tunDNS(r.tun.tunnel, cfg.TUN, eng, rt); err != nil {
			return fail(err)
		}
	}

	// The inbounds, last.
	r.inbound, err = mixed.Listen(mixed.Config{
		Listen:           cfg.Listen,
		AllowNonLoopback: cfg.AllowLAN,
		Auth:             cfg.ProxyAuth,
		Logger:           c.log,
		Panics:           r.panics,
	}, eng)
	if err != nil {
		return fail(err)
	}
	st := Status{State: Running, Outbound: rt.proxy, Listen: r.inbound.Addr().String()}
	if r.tun != nil {
		t := r.tun.tunnel
		r.tun.stack, err = netstack.New(t.Device, tunFlows, netstack.Options{MTU: t.MTU(), Logger: c.log, Panics: r.panics, Restore: r.restore})
		if err != nil {
			return fail(err)
		}
		st.TUN = t.Name()
	}

	r.startLoops(cfg.TUN != nil, c.log)
	return r, st, nil
}

// startLoops starts the run's own loops: the stats, the memory trimmer,
// the rule sets' updates and the network monitor. They are no flow's: a
// panic there ends the process, but only after the routes are restored
// (see package guard).
func (r *run) startLoops(tunMode bool, log *slog.Logger) {
	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer guard.Fatal(r.restore)
		r.stats.Run(runCtx)
	}()
	lim := limitsFor(tunMode)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer guard.Fatal(r.restore)
		trimMemory(runCtx, r.stats, 2*time.Second, lim, log)
	}()
	if sets := r.routing.sets; sets != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer guard.Fatal(r.restore)
			sets.run(runCtx)
		}()
	}
	r.netmon = watchNetwork(r, log)
}

// close is the one teardown of a run, for Stop and for a start that
// failed half-way: whatever parts were built stop in order — no re-dial
// or repair, no new flows from the TUN, the listener and its flows, the
// run's loops, the outbounds — and last the routes, rules and DNS go back
// as they were (restore).
func (r *run) close() error {
	if r.netmon != nil {
		r.netmon.Stop()
	}
	var errs []error
	if r.tun != nil && r.tun.stack != nil {
		errs = append(errs, r.tun.stack.Close())
	}
	if r.inbound != nil {
		errs = append(errs, r.inbound.Close()) // ends the flows and waits for them
	}
	r.stats.CloseAll() // flows that outlive their inbound, if any
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	if r.routing != nil {
		errs = append(errs, r.routing.close())
	}
	errs = append(errs, r.restoreRoutes())
	return errors.Join(errs...)
}

// restoreRoutes puts the machine's routes, rules and DNS back as they were
// before the run: the last step of close, and all that a process about to
// die of a panic does (restore).
func (r *run) restoreRoutes() error {
	if r.tun != nil && r.tun.tunnel != nil {
		return r.tun.tunnel.Close()
	}
	return nil
}

// restore is restoreRoutes for the panic handlers (guard.Fatal, the
// netstack's), which take a func().
func (r *run) restore() { r.restoreRoutes() }

// networkChanger is an outbound that holds connections bound to the
// network it dialled them on (Hysteria2's QUIC connection) and drops them
// when told the network changed.
type networkChanger interface{ NetworkChanged() }

// watchNetwork starts the run's network monitor (package netmon). On a
// change or a resume:
//   - the tunnel puts back the routes and rules the OS dropped, and the
//     bypass binds to the new default interface (macOS, Windows; on Linux
//     the fwmark follows the main table by itself);
//   - outbounds re-dial their long-lived connections from new sockets;
//     each dial resolves the server's name afresh, so a server that moved
//     is found at its new address.
//
// The fake-IP table is the DNS handler's and stays as it is: apps keep
// the addresses they were given.
func watchNetwork(r *run, log *slog.Logger) *netmon.Monitor {
	cfg := netmon.Config{Logger: log}
	if r.tun != nil {
		cfg.Ignore = r.tun.tunnel.Name()
	}
	return netmon.Start(cfg, func(ev netmon.Event) { r.networkChanged(ev, log) })
}

func (r *run) networkChanged(ev netmon.Event, log *slog.Logger) {
	if r.tun != nil {
		fixed, err := r.tun.tunnel.NetworkChanged()
		if len(fixed) > 0 {
			log.Warn("tun: re-installed what the network change removed", "changes", fixed)
		}
		if err != nil {
			log.Error("tun: re-install routes after a network change", "err", err)
		}
	}
	r.routing.mu.Lock()
	nodes := append([]outbound.Outbound(nil), r.routing.nodes...)
	r.routing.mu.Unlock()
	for _, o := range nodes {
		if nc, ok := o.(networkChanger); ok {
			nc.NetworkChanged()
		}
	}
}
