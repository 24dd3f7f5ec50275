//go:build !linux && !windows && !darwin

package process

import "net/netip"

type unsupported struct{}

func newOSFinder() osFinder { return unsupported{} }

func (unsupported) find(string, netip.AddrPort) (Info, error) { return Info{}, ErrUnsupported }
