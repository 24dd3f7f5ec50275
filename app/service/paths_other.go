//go:build !windows && !darwin

package service

import "os"

// Where the service listens and keeps the profile.
const (
	DefaultSocket   = "/run/skiff/skiff.sock"
	DefaultStateDir = "/var/lib/skiff"
)

// ensureStateDir makes dir (systemd's StateDirectory= makes it 0700 too).
func ensureStateDir(dir string) error { return os.MkdirAll(dir, 0o700) }
