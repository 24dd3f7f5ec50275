package service

// Where the service listens and keeps the profile.
const (
	DefaultSocket   = "/var/run/skiff/skiff.sock"
	DefaultStateDir = "/Library/Application Support/Skiff"
)
