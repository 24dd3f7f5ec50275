package service

// Where the service listens (a named pipe) and keeps the profile.
const (
	DefaultSocket   = `\\.\pipe\skiff`
	DefaultStateDir = `C:\ProgramData\Skiff`
)
