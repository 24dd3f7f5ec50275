//go:build !linux && !windows && !darwin

package autostart

import "errors"

// ErrUnsupported: this system has no login item Skiff knows.
var ErrUnsupported = errors.New("autostart: not supported on this system")

func (it *Item) enabled() (bool, error) { return false, nil }

func (it *Item) set(bool) error { return ErrUnsupported }
