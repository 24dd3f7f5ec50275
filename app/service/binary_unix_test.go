//go:build linux || darwin

package service

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestServiceBinary: a binary that a user owns, or that sits in a
// directory a user may write (a build tree, /tmp), is never what the root
// unit runs: it runs a root-owned copy. Before, Install wrote the unit
// with the build tree's path.
func TestServiceBinary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown)")
	}
	base, err := os.MkdirTemp("/run", "skiff-s2-install-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	content := []byte("#!/bin/sh\necho skiff\n")
	put := func(dir string, uid int, dirMode, mode os.FileMode) string {
		os.MkdirAll(dir, dirMode)
		os.Chmod(dir, dirMode)
		os.Chown(dir, uid, uid)
		p := filepath.Join(dir, "skiff")
		os.WriteFile(p, content, mode)
		os.Chmod(p, mode)
		os.Chown(p, 0, 0)
		return p
	}
	dest := filepath.Join(base, "lib", "skiff", "skiff")
	for _, tc := range []struct {
		name string
		exe  string
		copy bool
	}{
		{"root's", put(filepath.Join(base, "usr", "bin"), 0, 0o755, 0o755), false},
		{"in a user's build tree", put(filepath.Join(base, "home", "u", "skiff", "bin"), 1000, 0o755, 0o755), true},
		{"writable by others", put(filepath.Join(base, "opt"), 0, 0o755, 0o777), true},
		{"in /tmp", put(filepath.Join(t.TempDir(), "bin"), 0, 0o755, 0o755), true},
	} {
		os.Remove(dest)
		got, err := serviceBinary(tc.exe, dest, io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !tc.copy {
			if got != tc.exe {
				t.Errorf("%s: unit runs %s, want %s itself", tc.name, got, tc.exe)
			}
			continue
		}
		if got != dest {
			t.Errorf("%s: unit runs %s, want the copy %s", tc.name, got, dest)
			continue
		}
		if b, _ := os.ReadFile(dest); !bytes.Equal(b, content) {
			t.Errorf("%s: the copy differs", tc.name)
		}
		var st syscall.Stat_t
		syscall.Stat(dest, &st)
		if st.Uid != 0 || st.Mode&0o7777 != 0o755 {
			t.Errorf("%s: copy owner %d mode %o", tc.name, st.Uid, st.Mode&0o7777)
		}
		if err := rootsOnly(got); err != nil {
			t.Errorf("%s: the copy is not root's: %v", tc.name, err)
		}
		if u := Unit(got); !bytes.Contains([]byte(u), []byte("ExecStart="+dest+" service")) {
			t.Errorf("%s: unit %s", tc.name, u)
		}
	}
	// A destination a user could write is refused, not used.
	userDir := filepath.Join(base, "home", "u")
	os.Chown(userDir, 1000, 1000)
	if _, err := serviceBinary(put(filepath.Join(userDir, "b"), 1000, 0o755, 0o755), filepath.Join(userDir, "lib", "skiff"), io.Discard); err == nil {
		t.Error("copied into a user's directory")
	}
}
