// Package autostart is the "Start Skiff at login" setting of one user: the
// tray, skiff-tray, started by the desktop at login (Linux: an XDG
// autostart entry; Windows: the HKCU Run key; macOS: a LaunchAgent). The
// packages install the system-wide Linux entry and the Windows Run value;
// this package is what the user turns on and off, and it never needs
// more rights than the user's own.
package autostart

import (
	"fmt"

	"github.com/skiffvpn/skiff/internal/selfexe"
)

// Item is the login item that starts the tray at Tray.
type Item struct {
	Tray string // skiff-tray's absolute path
}

// TrayProgram is the tray's executable name (without ".exe").
const TrayProgram = "skiff-tray"

// EntryName is the Linux autostart entry's file name, the system-wide
// one's (packaging/linux) and the user's.
const EntryName = TrayProgram + ".desktop"

// Default is the item for the skiff-tray beside this executable, where
// every package puts it.
func Default() (*Item, error) {
	tray, err := selfexe.Beside(TrayProgram)
	if err != nil {
		return nil, fmt.Errorf("autostart: finding this executable: %w", err)
	}
	return &Item{Tray: tray}, nil
}

// Enabled reports whether the tray starts at the user's login.
func (it *Item) Enabled() (bool, error) { return it.enabled() }

// Enable makes the tray start at the user's login.
func (it *Item) Enable() error { return it.set(true) }

// Disable stops the tray starting at the user's login.
func (it *Item) Disable() error { return it.set(false) }

// Set is Enable when on, else Disable.
func (it *Item) Set(on bool) error { return it.set(on) }
