//go:build !windows

package process

func underWine() bool { return false }
