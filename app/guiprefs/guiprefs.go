// Package guiprefs is the desktop front ends' own preferences (gui.json
// beside the profile): how the window and the tray process start the core
// (mode, listen address, TUN options) and how the window looks. It has no
// Fyne, so the tray process reads and writes the same file.
package guiprefs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
)

// Name is the file, beside the profile, that holds the window's own
// preferences (what the core's profile has no field for).
const Name = "gui.json"

// Theme choices.
const (
	ThemeSystem = "system"
	ThemeLight  = "light"
	ThemeDark   = "dark"
)

// Prefs are the window's preferences. Everything the core reads lives in
// the profile (core/profile); these only steer the GUI and how it starts
// the core.
type Prefs struct {
	Mode           string `json:"mode,omitempty"`   // plan.ModeProxy, plan.ModeSystemProxy or plan.ModeTUN; empty: plan.ModeProxy
	Listen         string `json:"listen,omitempty"` // local proxy address; empty: core.DefaultListen
	StartConnected bool   `json:"startConnected,omitempty"`
	IPv6           bool   `json:"ipv6,omitempty"`     // TUN: route IPv6 too
	DNSMode        string `json:"dnsMode,omitempty"`  // TUN: "fake-ip" or "real-ip"; empty: fake-ip
	Theme          string `json:"theme,omitempty"`    // ThemeSystem, ThemeLight or ThemeDark; empty: system
	Language       string `json:"language,omitempty"` // an i18n.Languages code; empty: the system's
}

// ListenAddr returns the local proxy address to use.
func (p Prefs) ListenAddr() string {
	if p.Listen == "" {
		return core.DefaultListen
	}
	return p.Listen
}

// Request is the Connect request these preferences make: the mode, the
// local proxy's address, TUN's IPv6 and DNS choices.
func (p Prefs) Request() plan.Request {
	req := plan.Request{Mode: plan.ModeProxy, Listen: p.Listen, NoIPv6: !p.IPv6, DNS: p.DNSMode}
	switch p.Mode {
	case plan.ModeTUN, plan.ModeSystemProxy:
		req.Mode = p.Mode
	}
	return req
}

// Load reads dir/gui.json; a missing file gives the defaults.
func Load(dir string) (Prefs, error) {
	var p Prefs
	b, err := os.ReadFile(filepath.Join(dir, Name))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("reading window preferences: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return Prefs{}, fmt.Errorf("reading %s: %w", Name, err)
	}
	return p, nil
}

// Save writes p to dir/gui.json atomically, mode 0600.
func Save(dir string, p Prefs) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving window preferences: %w", err)
	}
	tmp, err := os.CreateTemp(dir, Name+".*")
	if err != nil {
		return fmt.Errorf("saving window preferences: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	if werr == nil {
		werr = tmp.Sync()
	}
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o600)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, Name))
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving window preferences: %w", werr)
	}
	return nil
}
