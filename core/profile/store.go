package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// EnvConfigDir names the environment variable that overrides the config
// directory (tests and portable installs set it).
const EnvConfigDir = "SKIFF_CONFIG_DIR"

// File names inside the config directory.
const (
	FileName   = "profile.json"     // the document
	BackupName = "profile.json.bak" // the previous good document
)

// maxFileSize bounds what Load reads: a profile with ten thousand nodes is
// a few MiB.
const maxFileSize = 64 << 20

// DefaultDir returns $SKIFF_CONFIG_DIR when set, else os.UserConfigDir()/skiff.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvConfigDir); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("profile: finding the config directory: %w", err)
	}
	return filepath.Join(d, "skiff"), nil
}

// Store reads and writes the profile in one directory. Its methods are safe
// for concurrent use within one process.
type Store struct {
	dir string
	mu  sync.Mutex
}

// Open returns the store for dir; an empty dir means DefaultDir. The
// directory is created (mode 0700) on the first Save.
func Open(dir string) (*Store, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return &Store{dir: dir}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path returns the profile file's path.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

// CorruptError reports a profile file that could not be read. The file was
// renamed to SetAside so that nothing overwrites it; when Recovered is true,
// Load returned the backup copy instead.
type CorruptError struct {
	Path      string
	SetAside  string
	Recovered bool
	Err       error
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("profile: %s is damaged (%v); it was kept as %s", e.Path, e.Err, e.SetAside)
	if e.Recovered {
		msg += "; the previous good copy was loaded instead"
	} else {
		msg += "; starting from an empty profile"
	}
	return msg
}

func (e *CorruptError) Unwrap() error { return e.Err }

// ErrNewerVersion is wrapped by Load when the file was written by a newer
// Skiff; the file is left as it is.
var ErrNewerVersion = errors.New("profile written by a newer version of Skiff")

// Load reads the profile. A missing file gives an empty profile (or the
// backup, when only the backup exists). A damaged file is renamed aside and
// Load returns the backup, or an empty profile, together with a
// *CorruptError saying so: the returned profile is usable. A file from a
// newer Skiff is an error wrapping ErrNewerVersion and nil.
func (s *Store) Load() (*Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load()
}

func (s *Store) load() (*Profile, error) {
	path := s.Path()
	p, err := readFile(path)
	if err == nil {
		return p, nil
	}
	if errors.Is(err, ErrNewerVersion) {
		return nil, err
	}
	var cerr *CorruptError
	if !errors.Is(err, fs.ErrNotExist) {
		if !isDamage(err) {
			return nil, err // e.g. permission denied: not the file's fault
		}
		aside := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405.000000000"))
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("profile: %s is damaged (%v) and could not be set aside: %w", path, err, rerr)
		}
		cerr = &CorruptError{Path: path, SetAside: aside, Err: err}
	}
	bp, berr := readFile(filepath.Join(s.dir, BackupName))
	switch {
	case berr == nil:
		if cerr != nil {
			cerr.Recovered = true
			return bp, cerr
		}
		return bp, nil
	case errors.Is(berr, ErrNewerVersion):
		return nil, berr
	}
	if cerr != nil {
		return New(), cerr
	}
	return New(), nil
}

// damageError marks errors caused by the file's content.
type damageError struct{ err error }

func (e damageError) Error() string { return e.err.Error() }
func (e damageError) Unwrap() error { return e.err }

func isDamage(err error) bool {
	var d damageError
	return errors.As(err, &d)
}

func readFile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFileSize+1)); err != nil {
		return nil, fmt.Errorf("profile: reading %s: %w", path, err)
	}
	if buf.Len() > maxFileSize {
		return nil, damageError{fmt.Errorf("larger than %d MiB", maxFileSize>>20)}
	}
	return Decode(buf.Bytes())
}

// Decode parses a profile document, migrating an older schema. Errors about
// the content wrap a type that Load treats as damage.
func Decode(b []byte) (*Profile, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, damageError{fmt.Errorf("not valid JSON: %w", err)}
	}
	version := 1 // hand-written files without a version are taken as the first schema
	if head.Version != nil {
		version = *head.Version
	}
	if version > SchemaVersion {
		return nil, fmt.Errorf("profile: schema %d: %w (this one reads up to %d)", version, ErrNewerVersion, SchemaVersion)
	}
	if version < 1 {
		return nil, damageError{fmt.Errorf("schema version %d", version)}
	}
	if version < SchemaVersion {
		var err error
		if b, err = migrate(b, version, migrations); err != nil {
			return nil, damageError{err}
		}
	}
	p := new(Profile)
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(p); err != nil {
		return nil, damageError{fmt.Errorf("decoding: %w", err)}
	}
	p.Version = SchemaVersion
	if err := p.Validate(); err != nil {
		return nil, damageError{err}
	}
	return p, nil
}

// migration turns a document of schema From into one of schema From+1.
type migration struct {
	From  int
	Apply func(doc map[string]any) error
}

// migrations lists the schema changes in order. Schema 1 is the first;
// append an entry here (and bump SchemaVersion) when the document changes
// shape.
var migrations = []migration{}

// migrate runs the migrations from version from up to the end of list.
func migrate(b []byte, from int, list []migration) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("migrating: %w", err)
	}
	v := from
	for _, m := range list {
		if m.From != v {
			continue
		}
		if err := m.Apply(doc); err != nil {
			return nil, fmt.Errorf("migrating schema %d to %d: %w", v, v+1, err)
		}
		v++
		doc["version"] = v
	}
	return json.Marshal(doc)
}

// Save writes p atomically: to a temporary file in the same directory,
// synced, then renamed over the profile after the current file has been
// kept as the backup. A crash at any point leaves either the old or the new
// document in place, and a good backup.
func (s *Store) Save(p *Profile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.save(p)
}

func (s *Store) save(p *Profile) error {
	p.Version = SchemaVersion
	if err := p.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("profile: encoding: %w", err)
	}
	b = append(b, '\n')
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("profile: creating %s: %w", s.dir, err)
	}
	path := s.Path()
	// Keep the current file, when it is good, as the backup. A hard link
	// leaves the current file in place the whole time.
	if _, err := readFile(path); err == nil {
		bak := filepath.Join(s.dir, BackupName)
		tmpBak := bak + ".tmp"
		os.Remove(tmpBak)
		if err := os.Link(path, tmpBak); err == nil {
			if err := os.Rename(tmpBak, bak); err != nil {
				os.Remove(tmpBak)
			}
		} else if err := copyFile(path, tmpBak); err == nil {
			os.Rename(tmpBak, bak)
		}
	}
	return writeAtomic(path, b)
}

// writeAtomic writes b to path atomically, readable by the owner only.
func writeAtomic(path string, b []byte) error {
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("profile: saving: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeAtomic(dst, b)
}

// Update loads the profile, lets fn change it and saves it, all under the
// store's lock. When fn returns an error nothing is saved. A damaged file is
// handled as in Load: fn sees the recovered profile.
func (s *Store) Update(fn func(*Profile) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load()
	if p == nil {
		return err
	}
	if err := fn(p); err != nil {
		return err
	}
	return s.save(p)
}
