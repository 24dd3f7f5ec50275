package tun

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"

	"github.com/skiffvpn/skiff/internal/rootdir"
)

// rootStateDir is %ProgramData%\Skiff, found with the Known Folder API
// (rootdir.ProgramData; C:\ProgramData when it fails): the service's
// directory, given rootdir.DirSDDL's ACL (SYSTEM and Administrators only).
func rootStateDir() string {
	pd, err := rootdir.ProgramData()
	if err != nil {
		pd = `C:\ProgramData`
	}
	return filepath.Join(pd, "Skiff")
}

// defaultStateFile is in rootStateDir for an elevated process (the
// service, an Administrator's CLI), else in the user's cache directory:
// only an elevated one can open a TUN adapter or change routes. Never
// "/run/skiff": that is C:\run\skiff, which any user can create.
func defaultStateFile() string {
	if !windows.GetCurrentProcessToken().IsElevated() {
		if dir, err := os.UserCacheDir(); err == nil {
			return filepath.Join(dir, "skiff", "tun-state.json")
		}
	}
	return filepath.Join(rootStateDir(), "tun-state.json")
}

// prepareStateDir makes the state file's directory; rootStateDir is made
// with its ACL, or checked and given it, at every use (rootdir.Ensure).
func prepareStateDir(dir string) error {
	if strings.EqualFold(filepath.Clean(dir), rootStateDir()) {
		return rootdir.Ensure(dir, 0)
	}
	return os.MkdirAll(dir, 0o700)
}
