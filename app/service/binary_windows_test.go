package service

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/windows"
)

// TestServiceBinaryWindows: an executable outside Program Files (a user's
// Downloads, a build tree) is copied there with wintun.dll, and the
// service registered with the copy; one under Program Files is used as it
// is. Run under Wine by hand (see docs/service-state.md); it writes
// %ProgramFiles%\Skiff.
func TestServiceBinaryWindows(t *testing.T) {
	if !windows.GetCurrentProcessToken().IsElevated() {
		t.Skip("needs an elevated process (writes Program Files)")
	}
	pf, err := windows.KnownFolderPath(windows.FOLDERID_ProgramFiles, windows.KF_FLAG_DEFAULT)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.MkdirTemp("", "skiff-build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(src)
	exe := filepath.Join(src, "skiff.exe")
	os.WriteFile(exe, []byte("MZ skiff"), 0o755)
	os.WriteFile(filepath.Join(src, "wintun.dll"), []byte("MZ wintun"), 0o644)
	got, err := serviceBinary(exe, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(pf, "Skiff", "skiff.exe")
	if got != want {
		t.Fatalf("service runs %s, want the copy %s", got, want)
	}
	defer os.RemoveAll(filepath.Join(pf, "Skiff"))
	if b, _ := os.ReadFile(want); !bytes.Equal(b, []byte("MZ skiff")) {
		t.Error("the copy differs")
	}
	if b, _ := os.ReadFile(filepath.Join(pf, "Skiff", "wintun.dll")); !bytes.Equal(b, []byte("MZ wintun")) {
		t.Error("wintun.dll was not copied beside it")
	}
	// The copy, under Program Files, is used as it is.
	if again, err := serviceBinary(want, io.Discard); err != nil || again != want {
		t.Errorf("service binary of %s: %s, %v", want, again, err)
	}
}
