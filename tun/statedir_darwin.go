package tun

import (
	"os"
	"path/filepath"

	"github.com/skiffvpn/skiff/internal/rootdir"
)

// rootStateDir is root's state directory: /var/run is root's, and emptied
// at boot, as the recorded changes are then gone. 0755: the service's
// socket is there too (the state files in it are 0600).
const rootStateDir = "/var/run/skiff"

// defaultStateFile is rootStateDir's for root, else the user's cache
// directory (~/Library/Caches). Never a temporary directory, nor a $HOME
// that launchd may not set: there anyone could plant the file root hands
// to pfctl and route.
func defaultStateFile() string {
	if os.Geteuid() != 0 {
		if dir, err := os.UserCacheDir(); err == nil && filepath.IsAbs(dir) {
			return filepath.Join(dir, "skiff", "tun-state.json")
		}
	}
	return filepath.Join(rootStateDir, "tun-state.json")
}

// prepareStateDir makes the state file's directory; rootStateDir is made
// or checked as root's (rootdir.Ensure) at every use.
func prepareStateDir(dir string) error {
	if filepath.Clean(dir) == rootStateDir {
		return rootdir.Ensure(dir, 0o755)
	}
	return os.MkdirAll(dir, 0o700)
}
