//go:build !windows

package service

import "context"

// RunManaged runs the service in the foreground until ctx ends (systemd
// and launchd run it as a plain process).
func RunManaged(ctx context.Context, o Options) error { return Run(ctx, o) }
