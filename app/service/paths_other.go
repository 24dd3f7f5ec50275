//go:build !windows && !darwin

package service

// Where the service listens and keeps the profile.
const (
	DefaultSocket   = "/run/skiff/skiff.sock"
	DefaultStateDir = "/var/lib/skiff"
)
