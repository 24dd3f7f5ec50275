package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret.json")
	for _, content := range []string{"first", "second, longer than the first", ""} {
		if err := WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("read back %q, %v; want %q", b, err, content)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want only the file (no temporary left)", len(entries))
	}
	// A folder that does not exist: an error naming the path, nothing written.
	if err := WriteFile(filepath.Join(dir, "no", "such"), nil, 0o600); err == nil {
		t.Error("wrote into a folder that does not exist")
	}
}

func TestCopy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("the binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "dest")
	if err := os.WriteFile(dest, []byte("the old binary, longer"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Copy(dest, src, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dest)
	if err != nil || string(b) != "the binary" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, %v; want 0755", fi.Mode(), err)
	}
	// A source that does not exist: the old file stays, no temporary left.
	if err := Copy(dest, filepath.Join(dir, "missing"), 0o755); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Copy from a missing file: %v, want fs.ErrNotExist", err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "the binary" {
		t.Fatalf("a failed copy changed the file: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the folder holds %d entries, want 2", len(entries))
	}
}
