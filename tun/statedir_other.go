//go:build !darwin && !windows

package tun

import (
	"os"
	"path/filepath"
)

// defaultStateFile is /run/skiff's when the process may write there
// (root), else the user's cache directory. Whether it may is tried, not
// assumed from the directory existing: a /run/skiff left by root must not
// lock out a user given CAP_NET_ADMIN (EACCES). /run is root's, so no
// other user can have made /run/skiff.
func defaultStateFile() string {
	const run = "/run/skiff"
	if st, err := os.Stat("/run"); err == nil && st.IsDir() {
		if err := os.MkdirAll(run, 0o700); err == nil && writable(run) {
			return filepath.Join(run, "tun-state.json")
		}
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "skiff", "tun-state.json")
	}
	return filepath.Join(os.TempDir(), "skiff-tun-state.json")
}

// prepareStateDir makes the state file's directory.
func prepareStateDir(dir string) error { return os.MkdirAll(dir, 0o700) }
