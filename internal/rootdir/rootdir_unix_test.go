//go:build linux || darwin

package rootdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rootBase returns a fresh directory under /run (root's, 0755), as the
// state directories' parents are; t.TempDir is under the world-writable
// /tmp, which Ensure refuses.
func rootBase(t *testing.T) string {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	d, err := os.MkdirTemp("/run", "skiff-s2-rootdir-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEnsure(t *testing.T) {
	base := rootBase(t)
	dir := filepath.Join(base, "skiff")
	if err := Ensure(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", st.Mode().Perm())
	}
	// Again: the directory is there and root's.
	if err := Ensure(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Root's but opened up: closed again.
	os.Chmod(dir, 0o777)
	if err := Ensure(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("mode %v after Ensure of a 0777 directory, want 0700", st.Mode().Perm())
	}
	// Planted by a user: refused.
	planted := filepath.Join(base, "planted")
	os.Mkdir(planted, 0o700)
	os.Chown(planted, 1000, 1000)
	if err := Ensure(planted, 0o700); err == nil || !strings.Contains(err.Error(), "uid 1000") {
		t.Errorf("a directory of uid 1000: %v", err)
	}
	// A symlink to a user's directory: refused.
	link := filepath.Join(base, "link")
	os.Symlink(planted, link)
	if err := Ensure(link, 0o700); err == nil {
		t.Error("a symlink was accepted")
	}
	// Under a directory a user owns, or everyone may write: refused.
	if err := Ensure(filepath.Join(planted, "skiff"), 0o700); err == nil {
		t.Error("a directory under uid 1000's was accepted")
	}
	tmp := t.TempDir()
	os.Chmod(tmp, 0o755)
	if err := Ensure(filepath.Join(tmp, "skiff"), 0o700); err == nil || !strings.Contains(err.Error(), "every user") {
		t.Errorf("a directory under %s (in /tmp): %v", tmp, err)
	}
	grp := filepath.Join(base, "grp")
	os.Mkdir(grp, 0o775)
	os.Chown(grp, 0, 1000)
	os.Chmod(grp, 0o775)
	if err := Ensure(filepath.Join(grp, "skiff"), 0o700); err == nil || !strings.Contains(err.Error(), "group 1000") {
		t.Errorf("a directory under one group 1000 may write: %v", err)
	}
}
