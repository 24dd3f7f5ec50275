package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"time"

	"github.com/skiffvpn/skiff/app/instance"
)

// acquire makes this process the one window of its user for this
// profile directory and service socket (a window on another profile, as
// tests start, is apart), or hands args to the window that runs and
// returns instance.ErrRunning.
func acquire(prefsDir, socket string, args []string) (*instance.Primary, error) {
	abs, err := filepath.Abs(prefsDir)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + socket))
	name := "window-" + hex.EncodeToString(sum[:6])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return instance.Acquire(ctx, instance.Config{Name: name}, args)
}
