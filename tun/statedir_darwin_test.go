package tun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultStateFileFixed: root's state file is at the fixed, root-owned
// place whatever the environment says; before, launchd's missing $HOME
// made it os.TempDir()'s.
func TestDefaultStateFileFixed(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("TMPDIR", t.TempDir())
	p := DefaultStateFile()
	if !filepath.IsAbs(p) || strings.HasPrefix(p, os.TempDir()) || strings.HasPrefix(p, "/tmp") || strings.HasPrefix(p, "/private/tmp") {
		t.Fatalf("state file %s: under a temporary directory", p)
	}
	if os.Geteuid() == 0 && p != "/var/run/skiff/tun-state.json" {
		t.Errorf("root's state file %s, want /var/run/skiff/tun-state.json", p)
	}
}
