package service

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffvpn/skiff/internal/atomicfile"
	"golang.org/x/sys/windows"
)

// serviceBinary returns the binary the LocalSystem service is to run for
// exe: exe itself under %ProgramFiles% (the installer's place, where only
// Administrators write), else a copy in %ProgramFiles%\Skiff, with
// wintun.dll when it is beside exe (the TUN adapter loads it from beside
// the executable). A service running a binary in a user's Downloads or
// build tree would run as SYSTEM whatever that user later puts there.
func serviceBinary(exe string, out io.Writer) (string, error) {
	pf, err := windows.KnownFolderPath(windows.FOLDERID_ProgramFiles, windows.KF_FLAG_DEFAULT)
	if err != nil {
		return "", fmt.Errorf("the Program Files folder: %w", err)
	}
	if rel, err := filepath.Rel(pf, exe); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
		return exe, nil
	}
	dir := filepath.Join(pf, "Skiff")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dest := filepath.Join(dir, "skiff.exe")
	if err := copyFile(exe, dest); err != nil {
		return "", fmt.Errorf("%s is outside %s: copy it there: %w", exe, pf, err)
	}
	dll := filepath.Join(filepath.Dir(exe), "wintun.dll")
	if err := copyFile(dll, filepath.Join(dir, "wintun.dll")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("copy %s: %w", dll, err)
	}
	fmt.Fprintf(out, "copied %s to %s (outside %s, users may write there): the service runs the copy\n", exe, dest, pf)
	return dest, nil
}

// copyFile copies src to dest atomically.
func copyFile(src, dest string) error { return atomicfile.Copy(dest, src, 0o755) }
