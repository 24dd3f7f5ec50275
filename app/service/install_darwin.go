package service

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// label is the launchd daemon's label, and plistPath its definition.
const (
	label     = "io.github.skiffvpn.skiff"
	plistPath = "/Library/LaunchDaemons/" + label + ".plist"
)

// plist is the launchd daemon running exe as the service, at boot and
// again when it dies.
func plist(exe string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key><string>` + label + `</string>
	<key>ProgramArguments</key>
	<array><string>` + exe + `</string><string>service</string></array>
	<key>RunAtLoad</key><true/>
	<key>KeepAlive</key><true/>
	<key>StandardErrorPath</key><string>/var/log/skiff.log</string>
</dict>
</plist>
`
}

// copiedBinary is where Install copies a binary that is not root's: the
// place macOS keeps privileged helpers (not /usr/local, which Homebrew
// gives to a user).
const copiedBinary = "/Library/PrivilegedHelperTools/skiff/skiff"

// Install makes exe the launchd daemon and starts it. The operators are
// the members of group skiff (create it with dseditgroup). Run as root. An
// exe that is not root's is copied to copiedBinary first (serviceBinary).
func Install(exe string, out io.Writer) error {
	exe, err := serviceBinary(exe, copiedBinary, out)
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if err := atomicfile.WriteFile(plistPath, []byte(plist(exe)), 0o644); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	fmt.Fprintf(out, "wrote %s\n", plistPath)
	if err := run(out, "launchctl", "bootstrap", "system", plistPath); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	return nil
}

// Uninstall stops and removes the daemon; the state stays.
func Uninstall(out io.Writer) error {
	err := run(out, "launchctl", "bootout", "system/"+label)
	if rerr := os.Remove(plistPath); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	return nil
}
