package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestHeapProfilerOff checks that the program starts with the heap
// profiler off: its table of sampled stacks costs memory nobody reads
// unless `skiff run --pprof` turns it on.
func TestHeapProfilerOff(t *testing.T) {
	if runtime.MemProfileRate != 0 {
		t.Fatalf("runtime.MemProfileRate = %d at start, want 0", runtime.MemProfileRate)
	}
}

// TestNoFyne: skiff (the CLI and the privileged service) builds without
// cgo, so nothing it imports may reach Fyne, the window's package or the
// window's image clipboard (golang.design/x/clipboard, cgo on Linux);
// only app/skiff-window does. Checked for every OS the service runs on.
func TestNoFyne(t *testing.T) {
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps (GOOS=%s): %v", goos, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "fyne.io/") || strings.HasPrefix(p, "golang.design/x/clipboard") || p == "github.com/skiffvpn/skiff/app/window" {
				t.Errorf("GOOS=%s: skiff imports %s", goos, p)
			}
		}
	}
}
