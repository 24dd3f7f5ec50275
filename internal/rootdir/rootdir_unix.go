//go:build linux || darwin

package rootdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Ensure makes dir a directory of root's with mode perm (at most 0755): it
// creates it, or checks the one there. One that another user owns, or a
// symlink, is refused; one of root's that others may write is given perm.
// Every directory above it must be root's already. Run as root.
func Ensure(dir string, perm os.FileMode) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s: only root keeps state here", dir)
	}
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s: not an absolute path", dir)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	if err := CheckAncestors(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory (%s): remove it", dir, st.Mode().Type())
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		return fmt.Errorf("%s is owned by uid %d, not root: someone else made it; remove it", dir, uid)
	}
	if st.Mode().Perm() != perm {
		if err := os.Chmod(dir, perm); err != nil {
			return err
		}
	}
	return nil
}

// CheckAncestors reports whether dir, after symlinks, and every directory
// above it is owned by root and writable by no other user.
func CheckAncestors(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	for p := real; ; p = filepath.Dir(p) {
		if err := rootOnly(p); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// RootOnly reports whether p (after symlinks) is owned by root and
// writable only by root (and group 0).
func RootOnly(p string) error { return rootOnly(p) }

func rootOnly(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	sys := st.Sys().(*syscall.Stat_t)
	switch {
	case sys.Uid != 0:
		return fmt.Errorf("%s is owned by uid %d, not root", p, sys.Uid)
	case st.Mode().Perm()&0o002 != 0:
		return fmt.Errorf("%s is writable by every user (mode %v)", p, st.Mode().Perm())
	case st.Mode().Perm()&0o020 != 0 && sys.Gid != 0:
		return fmt.Errorf("%s is writable by group %d (mode %v)", p, sys.Gid, st.Mode().Perm())
	}
	return nil
}
