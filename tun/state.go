package tun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Change is one thing Open changed in the system, recorded so that it can
// be undone. Exactly one of its fields besides Kind is set.
type Change struct {
	Kind  string   `json:"kind"`            // "rule", "route", "link" or "command"
	Rule  *Rule    `json:"rule,omitempty"`  // Linux policy rule
	Route *Route   `json:"route,omitempty"` // a route
	Link  string   `json:"link,omitempty"`  // a network interface Skiff created
	Undo  []string `json:"undo,omitempty"`  // a command (argv) that undoes the change, where no API is used
}

// String describes the change for logs and errors.
func (c Change) String() string {
	switch {
	case c.Rule != nil:
		return "rule " + c.Rule.String()
	case c.Route != nil:
		return "route " + c.Route.String()
	case c.Link != "":
		return "link " + c.Link
	default:
		return "command " + strings.Join(c.Undo, " ")
	}
}

// State is the content of the state file.
type State struct {
	Version int       `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	OS      string    `json:"os"`
	Changes []Change  `json:"changes"`
}

// stateFile is the state and where it is kept.
type stateFile struct {
	path  string
	State State
}

func newStateFile(path string) *stateFile {
	return &stateFile{path: path, State: State{Version: 1, PID: os.Getpid(), Started: time.Now().UTC(), OS: goos}}
}

func loadStateFile(path string) (*stateFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st := &stateFile{path: path}
	if err := json.Unmarshal(b, &st.State); err != nil {
		return nil, fmt.Errorf("tun: state file %s: %w", path, err)
	}
	if st.State.Version != 1 {
		return nil, fmt.Errorf("tun: state file %s: unknown version %d", path, st.State.Version)
	}
	return st, nil
}

// record appends c and writes the file before the change is made: after a
// crash the file lists everything that may have been changed.
func (s *stateFile) record(c Change) error {
	s.State.Changes = append(s.State.Changes, c)
	return s.save()
}

func (s *stateFile) save() error {
	b, err := json.MarshalIndent(&s.State, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("tun: state file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".tun-state-*")
	if err != nil {
		return fmt.Errorf("tun: state file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("tun: state file: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("tun: state file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("tun: state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tun: state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("tun: state file: %w", err)
	}
	return nil
}

func (s *stateFile) remove() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("tun: remove state file: %w", err)
	}
	return nil
}
