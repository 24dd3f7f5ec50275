// Package sysproxy points the desktop's proxy settings at Skiff's local
// proxy and puts them back afterwards: GNOME (gsettings) and KDE
// (kioslaverc) on Linux, with an environment file for new shells; WinINet's
// registry settings on Windows; networksetup for every enabled network
// service on macOS.
//
// A proxy left pointing at a dead port is the field's classic "no internet
// after a crash". So every setting Skiff changes is recorded, as it was
// before, in a state file (written atomically, mode 0600) before the first
// change; Disable puts each one back and removes the file, and Recover —
// called when the window or `skiff run` starts — does the same after a
// crash or kill -9. A setting the user changed while Skiff's proxy was on
// is left as the user set it.
//
// The system proxy is a per-user desktop setting: it is applied in the
// user's session (the window's process, or `skiff run --system-proxy`),
// never by the root service. The port it points to is served by whichever
// process runs the core.
package sysproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffvpn/skiff/internal/atomicfile"
	"github.com/skiffvpn/skiff/internal/pidalive"
)

// StateName is the state file's name in the directory given to New.
const StateName = "sysproxy.json"

// DefaultBypass is what goes direct, not through the proxy: the machine
// itself and the private and link-local ranges (the LAN, printers, the
// router's page), and names of the local network.
var DefaultBypass = []string{
	"localhost", "*.local",
	"127.0.0.0/8", "::1",
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
	"fc00::/7", "fe80::/10",
}

// Config is what the system proxy is set to.
type Config struct {
	Addr   netip.AddrPort // the local proxy: SOCKS5 and HTTP on one loopback port
	Bypass []string       // hosts, *.domains and CIDR ranges that go direct; nil: DefaultBypass
}

func (c Config) bypass() []string {
	if c.Bypass == nil {
		return DefaultBypass
	}
	return c.Bypass
}

// Setting is one OS setting as a store reads or writes it: its key in the
// store's own terms and its value as the store's tool prints and takes it.
type Setting struct {
	Key   string
	Value string
	Unset bool // the setting is absent (a default); writing it removes it
}

// store is one place where the OS keeps proxy settings.
type store interface {
	// name names the store in the state file and in messages.
	name() string
	// available reports whether the store is in use in this session; when
	// it is not, err says why (for messages).
	available(ctx context.Context) error
	// plan returns the settings that point the store at c.
	plan(ctx context.Context, c Config) ([]Setting, error)
	// get reads one setting by key.
	get(ctx context.Context, key string) (Setting, error)
	// set writes one setting.
	set(ctx context.Context, s Setting) error
	// changed tells the desktop that the settings were written.
	changed(ctx context.Context) error
}

// Change is one setting Skiff changed: its value before and Skiff's value,
// as read back after it was written.
type Change struct {
	Store    string `json:"store"`
	Key      string `json:"key"`
	Old      string `json:"old,omitempty"`
	OldUnset bool   `json:"oldUnset,omitempty"`
	New      string `json:"new"`
	NewUnset bool   `json:"newUnset,omitempty"`
}

// state is the state file: what to put back.
type state struct {
	Version int      `json:"version"`
	PID     int      `json:"pid"`  // the process that set it
	Addr    string   `json:"addr"` // where it pointed
	Changes []Change `json:"changes"`
}

const stateVersion = 1

// Proxy sets and restores the system proxy of this user's session. Its
// methods are not safe for concurrent use: one owner calls them in turn.
type Proxy struct {
	path   string
	stores []store
}

// New returns the Proxy for this OS, recording its state in dir/StateName.
func New(dir string) *Proxy {
	return &Proxy{path: filepath.Join(dir, StateName), stores: osStores(dir, execRunner)}
}

// StatePath is where the previous settings are recorded.
func (p *Proxy) StatePath() string { return p.path }

// Active reports whether settings are recorded: the system proxy is on, or
// a crashed run left it on.
func (p *Proxy) Active() bool {
	_, err := os.Stat(p.path)
	return err == nil
}

// ErrNoDesktop is returned (wrapped) by Enable when no desktop setting of
// this session could be found.
var ErrNoDesktop = errors.New("no desktop proxy setting found")

// Enable points the system proxy at c.Addr and returns the names of the
// stores it set. Settings a crashed run left are restored first. The
// previous values are recorded before anything changes; if a write fails,
// what was written is put back and the error returned.
func (p *Proxy) Enable(ctx context.Context, c Config) ([]string, error) {
	if !c.Addr.IsValid() || c.Addr.Port() == 0 {
		return nil, fmt.Errorf("sysproxy: invalid proxy address %v", c.Addr)
	}
	if err := p.Disable(ctx); err != nil {
		return nil, fmt.Errorf("sysproxy: restoring the earlier settings first: %w", err)
	}
	st := &state{Version: stateVersion, PID: os.Getpid(), Addr: c.Addr.String()}
	type planned struct {
		s    store
		sets []Setting
	}
	var todo []planned
	var why []string
	for _, s := range p.stores {
		if err := s.available(ctx); err != nil {
			why = append(why, err.Error())
			continue
		}
		sets, err := s.plan(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("sysproxy: %s: %w", s.name(), err)
		}
		for _, ns := range sets {
			old, err := s.get(ctx, ns.Key)
			if err != nil {
				return nil, fmt.Errorf("sysproxy: %s: reading %s: %w", s.name(), ns.Key, err)
			}
			st.Changes = append(st.Changes, Change{Store: s.name(), Key: ns.Key, Old: old.Value, OldUnset: old.Unset, New: ns.Value, NewUnset: ns.Unset})
		}
		todo = append(todo, planned{s, sets})
	}
	if len(todo) == 0 {
		return nil, fmt.Errorf("sysproxy: %w (%s)", ErrNoDesktop, strings.Join(why, "; "))
	}
	if err := p.save(st); err != nil {
		return nil, err
	}
	var names []string
	fail := func(err error) ([]string, error) {
		if rerr := p.Disable(ctx); rerr != nil {
			return nil, fmt.Errorf("%w (and putting the earlier settings back: %v)", err, rerr)
		}
		return nil, err
	}
	i := 0
	for _, t := range todo {
		for _, ns := range t.sets {
			if err := t.s.set(ctx, ns); err != nil {
				return fail(fmt.Errorf("sysproxy: %s: setting %s: %w", t.s.name(), ns.Key, err))
			}
			// What the store reads back is what Disable compares with.
			got, err := t.s.get(ctx, ns.Key)
			if err != nil {
				return fail(fmt.Errorf("sysproxy: %s: reading %s back: %w", t.s.name(), ns.Key, err))
			}
			st.Changes[i].New, st.Changes[i].NewUnset = got.Value, got.Unset
			i++
		}
		if err := t.s.changed(ctx); err != nil {
			return fail(fmt.Errorf("sysproxy: %s: %w", t.s.name(), err))
		}
		names = append(names, t.s.name())
	}
	if err := p.save(st); err != nil {
		return fail(err)
	}
	return names, nil
}

// Disable puts back every setting Enable changed, unless the user changed
// it since, and removes the state file. With no state file it does
// nothing. When a setting cannot be put back (its store is not reachable
// in this session), the state file stays for the next try and the error
// says which.
func (p *Proxy) Disable(ctx context.Context) error {
	st, err := p.load()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return p.restore(ctx, st)
}

// Recover puts back the settings of a run that ended without doing so (a
// crash, kill -9, a power cut) and reports whether there were any. The
// settings of a run that is still alive — another window, a `skiff run
// --system-proxy` — are left to it.
func (p *Proxy) Recover(ctx context.Context) (bool, error) {
	st, err := p.load()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st.PID != os.Getpid() && pidalive.Alive(st.PID) {
		return false, nil
	}
	return true, p.restore(ctx, st)
}

func (p *Proxy) restore(ctx context.Context, st *state) error {
	byName := map[string]store{}
	for _, s := range p.stores {
		byName[s.name()] = s
	}
	var errs []error
	touched := map[string]bool{}
	var order []store
	for i := len(st.Changes) - 1; i >= 0; i-- {
		ch := st.Changes[i]
		s := byName[ch.Store]
		if s == nil {
			errs = append(errs, fmt.Errorf("%s: not a store of this system", ch.Store))
			continue
		}
		if err := s.available(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: cannot put %s back now: %w", ch.Store, ch.Key, err))
			continue
		}
		cur, err := s.get(ctx, ch.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: reading %s: %w", ch.Store, ch.Key, err))
			continue
		}
		if cur.Unset != ch.NewUnset || (!cur.Unset && cur.Value != ch.New) {
			continue // changed by the user since: theirs now
		}
		if err := s.set(ctx, Setting{Key: ch.Key, Value: ch.Old, Unset: ch.OldUnset}); err != nil {
			errs = append(errs, fmt.Errorf("%s: putting %s back: %w", ch.Store, ch.Key, err))
			continue
		}
		if !touched[ch.Store] {
			touched[ch.Store] = true
			order = append(order, s)
		}
	}
	for _, s := range order {
		if err := s.changed(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name(), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sysproxy: restoring the settings recorded in %s: %w", p.path, errors.Join(errs...))
	}
	if err := os.Remove(p.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sysproxy: removing %s: %w", p.path, err)
	}
	return nil
}

func (p *Proxy) save(st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("sysproxy: encoding the state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return fmt.Errorf("sysproxy: %w", err)
	}
	if err := atomicfile.WriteFile(p.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("sysproxy: recording the earlier settings: %w", err)
	}
	return nil
}

// maxStateSize bounds the state file: a few dozen settings.
const maxStateSize = 1 << 20

func (p *Proxy) load() (*state, error) {
	b, err := os.ReadFile(p.path)
	if err != nil {
		return nil, err
	}
	if len(b) > maxStateSize {
		return nil, fmt.Errorf("sysproxy: %s: larger than %d bytes", p.path, maxStateSize)
	}
	st, err := decodeState(b)
	if err != nil {
		return nil, fmt.Errorf("sysproxy: %s: %w", p.path, err)
	}
	return st, nil
}

// decodeState reads a state file; it refuses what Enable never writes.
func decodeState(b []byte) (*state, error) {
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("not a state file: %w", err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("state version %d, want %d", st.Version, stateVersion)
	}
	for _, ch := range st.Changes {
		if ch.Store == "" || ch.Key == "" {
			return nil, errors.New("a change without store or key")
		}
	}
	return &st, nil
}
