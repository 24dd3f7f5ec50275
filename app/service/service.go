// Package service is `skiff service`: the long-running, privileged process
// that owns the core — the TUN device, routes, DNS, failover groups, the
// profile store and the subscription schedule — and serves the API
// (core/api) on a local socket to the window and the CLI. Nothing listens
// on TCP: the socket is a Unix socket (Linux, macOS) whose file mode and
// group admit the operators, with the peer's credentials checked again on
// every connection, or a named pipe with a DACL (Windows).
//
// On start it first undoes what a killed previous run left (routes, rules,
// DNS; tun's recorded plan), so a crash and restart leaves the machine as
// it was before the first start.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/exepages"
	"github.com/skiffvpn/skiff/tun"
)

// Group is the OS group whose members may operate Skiff through the
// service (besides root / Administrators).
const Group = "skiff"

// Options configure Run.
type Options struct {
	Socket   string // "": DefaultSocket
	StateDir string // where the profile is kept; "": DefaultStateDir
	Group    string // the operators' group; "": Group
	// LogLevel is the core's log level; nil: Info.
	LogLevel slog.Leveler
}

// Run runs the service until ctx ends: cleanup of leftovers, the core, the
// API on the socket. It returns once the core has stopped and the routes
// are restored.
func Run(ctx context.Context, o Options) error {
	if o.Socket == "" {
		o.Socket = DefaultSocket
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.Group == "" {
		o.Group = Group
	}
	ctrl := core.NewController(core.Options{LogOutput: os.Stderr, LogLevel: o.LogLevel})
	log := ctrl.Logger()
	// Routes and DNS first: a previous run killed mid-way left them.
	if tun.HasLeftovers("") {
		log.Warn("service: restoring routes and rules left by a previous run")
		if err := tun.Cleanup("", log); err != nil {
			log.Error("service: cleanup", "err", err)
		}
	}
	// The default directory is made, or checked, as root's only (with its
	// ACL on Windows) before anything is read from or written to it; one
	// given with --state-dir is the administrator's choice.
	mkdir := func(dir string) error { return os.MkdirAll(dir, 0o700) }
	if o.StateDir == DefaultStateDir {
		mkdir = ensureStateDir
	}
	if err := mkdir(o.StateDir); err != nil {
		return fmt.Errorf("service: state dir: %w", err)
	}
	store, err := profile.Open(o.StateDir)
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if _, err := store.Load(); err != nil {
		var cerr *profile.CorruptError
		if !errors.As(err, &cerr) {
			return fmt.Errorf("service: %w", err)
		}
		log.Warn("service: profile", "err", err)
	}
	local := api.NewLocal(ctrl, store, nil)
	// The kill switch before anything else: it holds from boot, while
	// nothing is connected yet. An error is logged, not fatal: the service
	// must come up to be told to turn it off.
	if err := local.ApplyKillSwitch(); err != nil {
		log.Error("service: kill switch", "err", err)
	}
	if err := local.Start(ctx); err != nil {
		return err
	}
	defer local.Close()

	ln, auth, err := listen(o.Socket, o.Group)
	if err != nil {
		return fmt.Errorf("service: listen %s: %w", o.Socket, err)
	}
	srv := &http.Server{
		Handler: api.NewHandler(local, api.HandlerOptions{Authorize: auth.authorize, Peer: peerName, Logger: log}),
		// A stalled client cannot hold a connection open without sending.
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       2 * time.Minute,
		ConnContext:       auth.connContext,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("service: listening", "socket", o.Socket, "group", o.Group, "state", filepath.Clean(o.StateDir))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// The connection the service had when it stopped (a reboot, a crash),
	// when the profile asks for it; clients already see it connecting.
	switch rt, err := local.Resume(ctx); {
	case err != nil:
		log.Error("service: reconnecting as before the stop", "err", err)
	case rt != nil:
		log.Info("service: reconnected as before the stop", "route", rt.Name, "mode", rt.Mode)
	}
	release := time.AfterFunc(startSettle, func() { releaseStartPages(log) })
	defer release.Stop()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("service: serve: %w", err)
	}
	log.Info("service: stopping")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx) // streams end with the request contexts
	srv.Close()
	return local.Close()
}

// startSettle is how long after it listens the service counts as started:
// its goroutines' stacks have grown and the resumed connection, if any, has
// begun. Released at once, the service mapped 5.7 MiB again in its first
// second; after 5 s, 1.9 MiB.
const startSettle = 5 * time.Second

// releaseStartPages unmaps the executable's pages that start-up touched
// and an idle service does not use (see package exepages); a connection's
// run does the same after its own start (core's trimmer). No collection:
// an idle service never needs one, and it would map pages of its own (the
// stacks' function tables, the heap's type descriptors), 1 MiB here.
func releaseStartPages(log *slog.Logger) {
	if _, err := exepages.Release(); err != nil {
		log.Debug("service: releasing the executable's pages", "err", err)
	}
}

// peerKey is the context key of a connection's peer.
type peerKey struct{}

// Peer is who is at the other end of an API connection.
type Peer struct {
	UID    int
	PID    int
	Groups []int // the peer process's groups (primary and supplementary)
	Name   string
	ID     string // who it is for the API's per-peer bounds: "uid N"; the user's SID on Windows
}

// peerName names r's caller for the API's per-peer bounds (Peer.ID).
func peerName(r *http.Request) string {
	if p, ok := r.Context().Value(peerKey{}).(*Peer); ok {
		return p.ID
	}
	return ""
}

// connContext and authorize are the two halves of the peer check: the
// first reads the credentials once per connection, the second refuses a
// request from a peer who is not an operator.
type authorizer struct {
	gid   int // the operators' group; -1 when it does not exist
	check func(c net.Conn) (*Peer, error)
}

func (a *authorizer) connContext(ctx context.Context, c net.Conn) context.Context {
	p, err := a.check(c)
	if err != nil {
		return context.WithValue(ctx, peerKey{}, err)
	}
	p.ID = peerID(c, p)
	return context.WithValue(ctx, peerKey{}, p)
}

func (a *authorizer) authorize(r *http.Request) error {
	switch v := r.Context().Value(peerKey{}).(type) {
	case *Peer:
		return a.allowed(v)
	case error:
		return fmt.Errorf("the caller's credentials could not be read: %w", v)
	}
	return errors.New("the caller's credentials could not be read")
}

// allowed admits root and members of the operators' group.
func (a *authorizer) allowed(p *Peer) error {
	if p.UID == 0 {
		return nil
	}
	if a.gid >= 0 {
		for _, g := range p.Groups {
			if g == a.gid {
				return nil
			}
		}
	}
	return fmt.Errorf("uid %d is not allowed to operate Skiff: only root and members of group %q are (sudo usermod -aG %s USER, then log in again)", p.UID, Group, Group)
}
