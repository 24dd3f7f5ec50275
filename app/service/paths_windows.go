package service

import (
	"path/filepath"

	"github.com/skiffvpn/skiff/internal/rootdir"
)

// DefaultSocket is where the service listens: a named pipe.
const DefaultSocket = `\\.\pipe\skiff`

// DefaultStateDir is where the service keeps the profile:
// %ProgramData%\Skiff as the Known Folder API names it (not the
// environment, which is the caller's), with rootdir.DirSDDL's ACL.
// Members reach the profile only through the API.
var DefaultStateDir = func() string {
	pd, err := rootdir.ProgramData()
	if err != nil {
		pd = `C:\ProgramData`
	}
	return filepath.Join(pd, "Skiff")
}()

// ensureStateDir makes or checks dir with its ACL.
func ensureStateDir(dir string) error { return rootdir.Ensure(dir, 0) }
