package sysproxy

import (
	"path/filepath"
)

// osStores is GNOME, KDE (each where installed and in use) and the shell
// snippet, which sits beside the state file.
func osStores(dir string, run runner) []store {
	return []store{gnome{tools{run: run}}, kde{tools: tools{run: run}}, envFile{path: filepath.Join(dir, EnvName)}}
}
