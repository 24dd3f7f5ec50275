package tun

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/skiffvpn/skiff/internal/rootdir"
)

// TestDefaultStateFileFixed: an elevated process keeps its state in
// %ProgramData%\Skiff as the Known Folder API names it, whatever the
// environment says; before, it was /run/skiff (C:\run\skiff, which any
// user can create) whenever C:\run existed.
func TestDefaultStateFileFixed(t *testing.T) {
	t.Setenv("ProgramData", t.TempDir())
	t.Setenv("LOCALAPPDATA", t.TempDir())
	p := DefaultStateFile()
	if v := strings.ToLower(filepath.VolumeName(p)); strings.HasPrefix(strings.ToLower(strings.TrimPrefix(p, v)), `\run\`) {
		t.Fatalf("state file %s", p)
	}
	if windows.GetCurrentProcessToken().IsElevated() {
		pd, err := rootdir.ProgramData()
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(pd, "Skiff", "tun-state.json"); p != want {
			t.Errorf("elevated state file %s, want %s", p, want)
		}
	}
}
