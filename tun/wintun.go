package tun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// wintunDLL is Wintun's library (TUN mode on Windows), which the installer
// puts beside skiff.exe.
const wintunDLL = "wintun.dll"

// ErrNoWintun is in the chain of every *WintunError: TUN mode on Windows
// cannot work because wintun.dll does not load from beside the executable.
var ErrNoWintun = errors.New("tun: wintun.dll cannot be loaded from beside the executable")

// WintunError is the error of Open and CheckDriver on Windows when
// wintun.dll cannot be used. It is also fs.ErrNotExist when the file is
// missing.
type WintunError struct {
	Path string // where it must be: beside the executable ("" when that is unknown)
	Err  error  // why it cannot be used
}

func (e *WintunError) Error() string {
	if errors.Is(e.Err, fs.ErrNotExist) {
		return fmt.Sprintf("tun: TUN mode needs wintun.dll beside the skiff executable, and %s is missing: reinstall Skiff (the local proxy works without it)", e.Path)
	}
	if e.Path == "" {
		return fmt.Sprintf("tun: TUN mode needs wintun.dll beside the skiff executable: %v", e.Err)
	}
	return fmt.Sprintf("tun: TUN mode needs wintun.dll beside the skiff executable: %s: %v", e.Path, e.Err)
}

func (e *WintunError) Unwrap() []error { return []error{ErrNoWintun, e.Err} }

// wintunPath returns the wintun.dll beside exe, the running executable's
// absolute path: the only one Skiff loads, never one in the current folder,
// on PATH or in System32.
func wintunPath(exe string) (string, error) {
	if !filepath.IsAbs(exe) {
		return "", &WintunError{Err: fmt.Errorf("the executable's path %q is not absolute", exe)}
	}
	p := filepath.Join(filepath.Dir(exe), wintunDLL)
	fi, err := os.Stat(p)
	if err != nil {
		return "", &WintunError{Path: p, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return "", &WintunError{Path: p, Err: fmt.Errorf("not a file (%v)", fi.Mode().Type())}
	}
	return p, nil
}
