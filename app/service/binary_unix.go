//go:build linux || darwin

package service

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/skiffvpn/skiff/internal/atomicfile"
	"github.com/skiffvpn/skiff/internal/rootdir"
)

// serviceBinary returns the binary the root unit is to run for exe: exe
// itself when it is root's (owned by root and writable by no one else, as
// every directory above it: a package's /usr/bin/skiff), else a copy of
// it at dest, made root's, 0755, atomically. A unit running a binary in a
// build tree (`sudo bin/skiff service install`) would run as root whatever
// the tree's owner later puts there.
func serviceBinary(exe, dest string, out io.Writer) (string, error) {
	why := rootsOnly(exe)
	if why == nil {
		return exe, nil
	}
	if err := rootdir.Ensure(filepath.Dir(dest), 0o755); err != nil {
		return "", fmt.Errorf("%s is not root's (%v), and it cannot be copied to %s: %w", exe, why, dest, err)
	}
	if err := copyBinary(exe, dest); err != nil {
		return "", fmt.Errorf("%s is not root's (%v): copy it to %s: %w", exe, why, dest, err)
	}
	fmt.Fprintf(out, "copied %s to %s (%v): the service runs the copy; install again after a rebuild\n", exe, dest, why)
	return dest, nil
}

// rootsOnly reports why exe is not root's, or nil.
func rootsOnly(exe string) error {
	st, err := os.Lstat(exe)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	if err := rootdir.RootOnly(exe); err != nil {
		return err
	}
	return rootdir.CheckAncestors(filepath.Dir(exe))
}

// copyBinary copies exe to dest atomically: 0755, then root's (the copy
// is root's already when root runs it; the group may be the folder's).
func copyBinary(exe, dest string) error {
	if err := atomicfile.Copy(dest, exe, 0o755); err != nil {
		return err
	}
	return os.Chown(dest, 0, 0)
}
