// Package selfexe finds this program's own executable and the programs
// installed beside it. Every package puts skiff, skiff-tray and
// skiff-window in one directory, and each finds the others there. Symlinks
// are resolved, so that a link to one of them (in /usr/bin, say) finds the
// others beside the real file.
package selfexe

import (
	"os"
	"path/filepath"
	"runtime"
)

// Path is this program's executable, symlinks resolved.
func Path() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}

// Beside is the program name (with ".exe" on Windows) in Path's directory.
func Beside(name string) (string, error) {
	exe, err := Path()
	if err != nil {
		return "", err
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(filepath.Dir(exe), name), nil
}
