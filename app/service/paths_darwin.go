package service

import "github.com/skiffvpn/skiff/internal/rootdir"

// Where the service listens and keeps the profile: fixed, root's.
const (
	DefaultSocket   = "/var/run/skiff/skiff.sock"
	DefaultStateDir = "/Library/Application Support/Skiff"
)

// ensureStateDir makes or checks dir as root's, 0700.
func ensureStateDir(dir string) error { return rootdir.Ensure(dir, 0o700) }
