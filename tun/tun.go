// Package tun opens Skiff's TUN device and points the system's traffic at
// it: it gives the device its addresses and MTU, installs the routes (and on
// Linux the policy rules) that send everything except the proxy servers,
// loopback and, by default, the local networks into it, and keeps Skiff's
// own sockets out of it. Every change is written to a state file before it
// is made, so that Close, the next Open or `skiff cleanup` puts the system
// back exactly as it was, even after a crash.
package tun

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"sync"

	wgtun "golang.zx2c4.com/wireguard/tun"

	"github.com/skiffvpn/skiff/internal/pidalive"
	"github.com/skiffvpn/skiff/internal/sysdial"
)

// Defaults for Config.
const (
	DefaultName         = "skiff0"
	DefaultMTU          = 9000
	DefaultMark         = 0x534b // "SK": the fwmark on Skiff's own sockets
	DefaultTable        = 5348   // the routing table that leads into the device
	DefaultRulePriority = 5300   // the first of Skiff's ip rule priorities
)

// Default device addresses: a /30 and a /126 of which the device takes the
// first address. The netstack answers for every other address.
var (
	DefaultAddr4 = netip.MustParsePrefix("172.19.0.1/30")
	DefaultAddr6 = netip.MustParsePrefix("fdfe:dcba:9876::1/126")
)

// ErrPermission is returned (wrapped) by Open when the process may not
// create a TUN device or change routes.
var ErrPermission = errors.New("TUN mode needs root or CAP_NET_ADMIN: run with sudo or `setcap cap_net_admin+ep skiff`")

// ErrStillRunning is returned (wrapped) by Cleanup when the process that
// made the recorded changes is still running.
var ErrStillRunning = errors.New("the skiff that made the changes is still running")

// Config says how to open the device and route traffic into it. Start from
// DefaultConfig: the zero value routes nothing.
type Config struct {
	Name  string       // device name (DefaultName; ignored on macOS, which picks utunN)
	MTU   int          // DefaultMTU when 0
	Addr4 netip.Prefix // the device's IPv4 address; none when invalid
	Addr6 netip.Prefix // the device's IPv6 address; none when invalid

	// AutoRoute sends all traffic into the device, except ExcludeServers,
	// loopback and (with ExcludePrivate) the private and link-local ranges.
	AutoRoute bool
	// StrictRoute also stops traffic from leaving through other interfaces:
	// DNS to any address (port 53, even on the LAN) goes into the device,
	// sockets bound to another interface get no route beyond the LAN, and
	// IPv6 is blocked when the device has no IPv6 address. On Linux with
	// policy rules; on Windows with WFP filters and on macOS with a pf
	// anchor, which cover DNS and the family without an address (see
	// planWFP and pfStrictRules), but not sockets bound to another
	// interface.
	StrictRoute bool
	// ExcludeServers are the proxy servers' own addresses: always reached
	// directly, so that a server is never dialed through the tunnel.
	ExcludeServers []netip.Prefix
	// ExcludePrivate keeps the private, CGNAT, link-local and multicast
	// ranges out of the device, so the LAN stays reachable.
	ExcludePrivate bool
	// Include are ranges routed into the device even inside an excluded
	// range: the fake-IP pool's (its IPv6 range is a ULA, inside fc00::/7).
	Include []netip.Prefix

	Mark         uint32 // fwmark of Skiff's sockets (Linux); DefaultMark when 0
	Table        int    // routing table (Linux); DefaultTable when 0
	RulePriority int    // first rule priority (Linux); DefaultRulePriority when 0

	// StateFile records the changes made; DefaultStateFile() when "".
	StateFile string
	// Logger receives route changes and default-interface changes; nil
	// discards them.
	Logger *slog.Logger
}

// DefaultConfig returns the configuration Skiff uses: auto-route and strict
// route on, private ranges excluded, a 9000-byte MTU.
func DefaultConfig() Config {
	return Config{
		Name:           DefaultName,
		MTU:            DefaultMTU,
		Addr4:          DefaultAddr4,
		Addr6:          DefaultAddr6,
		AutoRoute:      true,
		StrictRoute:    true,
		ExcludePrivate: true,
	}
}

// fill puts in the defaults and checks what reaches the system (check).
func (c *Config) fill() error {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.Mark == 0 {
		c.Mark = DefaultMark
	}
	if c.Table == 0 {
		c.Table = DefaultTable
	}
	if c.RulePriority == 0 {
		c.RulePriority = DefaultRulePriority
	}
	if c.StateFile == "" {
		c.StateFile = DefaultStateFile()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c.check()
}

// DefaultStateFile returns where the state file lives: a fixed directory
// only root (SYSTEM, Administrators) may write when the process is
// privileged, else the user's cache directory (statedir_*.go).
func DefaultStateFile() string { return defaultStateFile() }

// writable reports whether this process can create files in dir.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// Tunnel is an open TUN device with its routes.
type Tunnel struct {
	// Device is the TUN device. Hand it to the netstack, which then owns
	// reading and writing; Close closes it too.
	Device wgtun.Device

	cfg   Config
	name  string
	log   *slog.Logger
	state *stateFile
	bind  *bypass
	// closers release what lives as long as the tunnel but is not a
	// recorded change (Windows' WFP session), after the device is closed.
	closers []func() error

	closeOnce sync.Once
	closeErr  error

	mu sync.Mutex // serialises NetworkChanged and AddExclusions
}

// Name returns the device's name (e.g. "skiff0", "utun5").
func (t *Tunnel) Name() string { return t.name }

// MTU returns the device's MTU.
func (t *Tunnel) MTU() int { return t.cfg.MTU }

// Dialer returns the dialer for Skiff's own sockets (the outbounds' sockets
// to their servers and the direct outbound): they bypass the tunnel, with
// the fwmark on Linux and bound to the current default interface elsewhere.
func (t *Tunnel) Dialer() sysdial.Dialer { return t.bind }

// NetworkChanged is called when the network under the tunnel changed (see
// package netmon): the bypass looks for the new default interface at once
// (macOS, Windows), and the routes and rules that the OS dropped with an
// interface are put back (Linux). It returns what it re-installed.
func (t *Tunnel) NetworkChanged() ([]string, error) {
	t.bind.refresh()
	t.mu.Lock()
	defer t.mu.Unlock()
	return repairPlatform(t)
}

// Close removes every route and rule that Open added, closes the device and
// deletes the state file. It is safe to call more than once.
func (t *Tunnel) Close() error {
	t.closeOnce.Do(func() {
		t.bind.stop()
		errDev := t.Device.Close()
		if errors.Is(errDev, os.ErrClosed) {
			errDev = nil
		}
		errs := []error{errDev}
		for _, c := range t.closers {
			errs = append(errs, c())
		}
		errs = append(errs, restore(t.state, t.log))
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

// Open creates the TUN device and, with AutoRoute, routes traffic into it.
// Leftovers of a previous run that did not stop cleanly are removed first.
// On failure everything done so far is undone.
func Open(cfg Config) (*Tunnel, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("tun: %w", err)
	}
	if err := Cleanup(cfg.StateFile, cfg.Logger); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("tun: %w (%v)", ErrPermission, err)
		}
		return nil, fmt.Errorf("tun: remove leftovers of a previous run: %w", err)
	}
	st := newStateFile(cfg.StateFile)
	t := &Tunnel{cfg: cfg, log: cfg.Logger, state: st}
	if err := openPlatform(t); err != nil {
		if errors.Is(err, fs.ErrPermission) && !errors.Is(err, ErrPermission) {
			err = fmt.Errorf("tun: %w (%v)", ErrPermission, err)
		}
		if t.Device != nil {
			t.Device.Close()
		}
		for _, c := range t.closers {
			c()
		}
		if rerr := restore(st, t.log); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	// The device reports link changes on a channel that must be drained;
	// the goroutine ends when Close closes the device and the channel.
	go t.watchEvents()
	return t, nil
}

func (t *Tunnel) watchEvents() {
	for ev := range t.Device.Events() {
		switch {
		case ev&wgtun.EventDown != 0:
			t.log.Warn("tun: device down", "device", t.name)
		case ev&wgtun.EventUp != 0:
			t.log.Debug("tun: device up", "device", t.name)
		case ev&wgtun.EventMTUUpdate != 0:
			t.log.Debug("tun: device MTU changed", "device", t.name)
		}
	}
}

// Cleanup undoes what a run recorded in stateFile ("" for the default)
// before it stopped without closing (a crash, kill -9). It returns nil when
// there is nothing to clean.
func Cleanup(stateFile string, log *slog.Logger) error {
	if stateFile == "" {
		stateFile = DefaultStateFile()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := loadStateFile(stateFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if pid := st.State.PID; pid != os.Getpid() && pidalive.Alive(pid) {
		return fmt.Errorf("tun: %s: %w (pid %d): stop it first", stateFile, ErrStillRunning, pid)
	}
	log.Info("tun: restoring routes left by a previous run", "pid", st.State.PID, "state", stateFile)
	return restore(st, log)
}

// HasLeftovers reports whether stateFile ("" for the default) records
// changes not yet undone.
func HasLeftovers(stateFile string) bool {
	if stateFile == "" {
		stateFile = DefaultStateFile()
	}
	_, err := os.Stat(stateFile)
	return err == nil
}

// restore undoes the recorded changes in reverse order and removes the
// state file when all of them are undone.
func restore(st *stateFile, log *slog.Logger) error {
	var errs []error
	c := st.State.Changes
	for i := len(c) - 1; i >= 0; i-- {
		if err := undo(c[i]); err != nil {
			errs = append(errs, fmt.Errorf("tun: undo %s: %w", c[i], err))
			continue
		}
		log.Debug("tun: undone", "change", c[i].String())
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return st.remove()
}
