//go:build !linux

package stats

// osRSS is not read from the OS here; ReadMemory falls back to the Go
// runtime's own figure.
func osRSS() (uint64, bool) { return 0, false }
