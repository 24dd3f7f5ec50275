package tun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	// Root's directory is checked (and its ACL restored) before reading:
	// what another user could have written there is not trusted.
	if err := prepareStateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("tun: state file %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st, err := decodeState(b)
	if err != nil {
		return nil, fmt.Errorf("tun: state file %s: %w", path, err)
	}
	return &stateFile{path: path, State: st}, nil
}

// decodeState parses a state file. Only Skiff writes it, so a change that
// Skiff never records, or records on another OS, means the file was
// damaged or planted: the whole file is refused and nothing of it is run,
// since cleanup runs as root, deletes what the file names and runs the
// commands it lists (stateundo.go has their grammar).
func decodeState(b []byte) (State, error) {
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, err
	}
	if st.Version != 1 {
		return State{}, fmt.Errorf("unknown version %d", st.Version)
	}
	for i, c := range st.Changes {
		if err := c.check(); err != nil {
			return State{}, fmt.Errorf("refused: change %d: %w", i+1, err)
		}
		if err := c.checkOS(st.OS); err != nil {
			return State{}, fmt.Errorf("refused: change %d: %w", i+1, err)
		}
	}
	if err := checkNetshAdapter(st.Changes); err != nil {
		return State{}, fmt.Errorf("refused: %w", err)
	}
	return st, nil
}

// nftKillSwitchUndo deletes the kill switch's nftables table.
var nftKillSwitchUndo = []string{"nft", "delete", "table", "inet", nftKillSwitchTable}

// isGUID reports whether s is a GUID as Windows prints it,
// "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}" (braces optional).
func isGUID(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// maxLinkName is the longest interface name (Linux IFNAMSIZ without the
// terminating NUL).
const maxLinkName = 15

// check reports whether c is a change as Skiff records them: of a known
// kind, with exactly that kind's field set and usable. A route without a
// destination, for one, would be undone as the deletion of the default
// route.
func (c Change) check() error {
	set := 0
	for _, isSet := range []bool{c.Rule != nil, c.Route != nil, c.Link != "", len(c.Undo) > 0} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("%q change with %d of rule, route, link and undo set", c.Kind, set)
	}
	switch c.Kind {
	case "rule":
		if c.Rule == nil {
			return errors.New("rule change without a rule")
		}
		if f := c.Rule.Family; f != 4 && f != 6 {
			return fmt.Errorf("rule of family %d", f)
		}
		if d := c.Rule.Dst; d.IsValid() && d.Addr().Is4() != (c.Rule.Family == 4) {
			return fmt.Errorf("family %d rule to %s", c.Rule.Family, d)
		}
	case "route":
		if c.Route == nil || !c.Route.Dst.IsValid() {
			return errors.New("route change without a destination")
		}
		if g := c.Route.Gateway; g.IsValid() && g.Is4() != c.Route.Dst.Addr().Is4() {
			return fmt.Errorf("route to %s via %s", c.Route.Dst, g)
		}
	case "link":
		if c.Link == "" || len(c.Link) > maxLinkName || strings.ContainsAny(c.Link, "/ \t\n\x00") {
			return fmt.Errorf("link %q", c.Link)
		}
	case "command":
		if err := checkUndoCommand(c.Undo); err != nil {
			return err
		}
	case "nft":
		// The kill switch's table: the one nft change Skiff records.
		if !slices.Equal(c.Undo, nftKillSwitchUndo) {
			return fmt.Errorf("nft undo %q is not the kill switch's", c.Undo)
		}
	case "wfp":
		// The kill switch's persistent WFP objects: their GUID keys.
		if len(c.Undo) < 2 || c.Undo[0] != "wfp" {
			return fmt.Errorf("wfp undo %q names no filter", c.Undo)
		}
		for _, k := range c.Undo[1:] {
			if !isGUID(k) {
				return fmt.Errorf("wfp undo: %q is not a GUID", k)
			}
		}
	default:
		return fmt.Errorf("unknown change kind %q", c.Kind)
	}
	return nil
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
	if err := prepareStateDir(filepath.Dir(s.path)); err != nil {
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
