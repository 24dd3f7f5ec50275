// Package atomicfile writes files so that a reader, or the next start after
// a crash or a power cut, sees either the old content or the new, never a
// half-written file: the data goes to a temporary file in the same folder,
// which is synced, given its mode, and renamed over the old one; then the
// folder is synced so that the rename itself is durable.
package atomicfile

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically with permissions perm (applied
// before any byte is written, so a secret is never readable by others, not
// even for a moment).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, bytes.NewReader(data), perm)
}

// Copy copies the file src to path atomically with permissions perm.
func Copy(path, src string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer in.Close()
	return Write(path, in, perm)
}

// Write writes what r holds to path atomically with permissions perm, as
// WriteFile does.
func Write(path string, r io.Reader, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	syncDir(dir)
	return nil
}

// syncDir flushes a directory entry change (the rename) to disk where the OS
// allows it; where it does not (Windows), the rename is already durable
// enough and the error is ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
