package tun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWintunPath: the DLL is taken from beside the executable only; one in
// the current folder, on PATH or beside a relative executable path is not
// used, and each refusal is a *WintunError that names the path it wanted.
func TestWintunPath(t *testing.T) {
	root := t.TempDir()
	dir := func(name string, dll bool) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if dll {
			if err := os.WriteFile(filepath.Join(d, wintunDLL), []byte("MZ"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	installed := dir("Skiff", true)
	bare := dir("bare", false)
	cwd := dir("cwd", true)
	onPath := dir("path", true)
	asDir := dir("dir", false)
	if err := os.Mkdir(filepath.Join(asDir, wintunDLL), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	t.Setenv("PATH", onPath)

	for _, tc := range []struct {
		name, exe, want string
		missing         bool   // the error is fs.ErrNotExist
		err             string // in the error's text
	}{
		{name: "beside the executable", exe: filepath.Join(installed, "skiff.exe"), want: filepath.Join(installed, wintunDLL)},
		{name: "not beside it, though in the current folder and on PATH", exe: filepath.Join(bare, "skiff.exe"),
			missing: true, err: filepath.Join(bare, wintunDLL) + " is missing"},
		{name: "a relative executable path (the current folder's DLL)", exe: "skiff.exe", err: `path "skiff.exe" is not absolute`},
		{name: "an empty executable path", exe: "", err: "not absolute"},
		{name: "a folder named wintun.dll", exe: filepath.Join(asDir, "skiff.exe"), err: filepath.Join(asDir, wintunDLL) + ": not a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wintunPath(tc.exe)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("wintunPath(%q) = %q, %v; want %q", tc.exe, got, err, tc.want)
				}
				return
			}
			var we *WintunError
			if got != "" || !errors.As(err, &we) || !errors.Is(err, ErrNoWintun) {
				t.Fatalf("wintunPath(%q) = %q, %v (%T); want a *WintunError", tc.exe, got, err, err)
			}
			if errors.Is(err, fs.ErrNotExist) != tc.missing {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v", err, !tc.missing)
			}
			if !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "TUN mode needs wintun.dll beside the skiff executable") {
				t.Errorf("error %q does not say %q", err, tc.err)
			}
		})
	}
}
