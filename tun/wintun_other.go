//go:build !windows

package tun

// CheckDriver reports whether Open can find what it needs to create a
// device. Only Windows needs a library (wintun.dll), so elsewhere it is
// nil.
func CheckDriver() error { return nil }
