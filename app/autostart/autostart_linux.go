package autostart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// maxEntry bounds how much of an existing entry is read.
const maxEntry = 64 << 10

// userEntry is the user's entry: $XDG_CONFIG_HOME/autostart, else
// ~/.config/autostart.
func userEntry() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) { // the spec: a relative value is ignored
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("autostart: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "autostart", EntryName), nil
}

// systemEntry is the first system-wide entry in $XDG_CONFIG_DIRS (else
// /etc/xdg) that exists, "" when none does.
func systemEntry() string {
	dirs := os.Getenv("XDG_CONFIG_DIRS")
	if dirs == "" {
		dirs = "/etc/xdg"
	}
	for _, d := range filepath.SplitList(dirs) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, "autostart", EntryName)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// entryOn reads an entry: whether it starts its program (not Hidden, not
// disabled for GNOME). A missing entry is fs.ErrNotExist.
func entryOn(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	on, group := true, ""
	sc := bufio.NewScanner(io.LimitReader(f, maxEntry))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			group = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || group != "[Desktop Entry]" {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Hidden":
			on = on && strings.TrimSpace(v) != "true"
		case "X-GNOME-Autostart-enabled":
			on = on && strings.TrimSpace(v) != "false"
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("autostart: reading %s: %w", path, err)
	}
	return on, nil
}

func (it *Item) enabled() (bool, error) {
	user, err := userEntry()
	if err != nil {
		return false, err
	}
	on, err := entryOn(user)
	if !errors.Is(err, fs.ErrNotExist) {
		return on, err // the user's entry overrides the system's
	}
	if sys := systemEntry(); sys != "" {
		on, err := entryOn(sys)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return on, err
	}
	return false, nil
}

// set writes the user's entry, or removes it where the system-wide entry
// does what is asked: on, the system entry (when it starts the tray) or
// an entry of the user's that starts Tray; off, an entry Hidden=true that
// hides the system's (XDG: a user entry of the same name wins) or none.
func (it *Item) set(on bool) error {
	user, err := userEntry()
	if err != nil {
		return err
	}
	sysOn := false
	if sys := systemEntry(); sys != "" {
		if sysOn, err = entryOn(sys); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	var data []byte
	switch {
	case on == sysOn:
		if err := os.Remove(user); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("autostart: %w", err)
		}
		return nil
	case on:
		if it.Tray == "" || !filepath.IsAbs(it.Tray) {
			return fmt.Errorf("autostart: the tray's path %q is not absolute", it.Tray)
		}
		data = entry("Exec=" + quoteExec(it.Tray) + "\nX-GNOME-Autostart-enabled=true\n")
	default:
		data = entry("Exec=" + TrayProgram + "\nHidden=true\n")
	}
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	if err := atomicfile.WriteFile(user, data, 0o644); err != nil {
		return fmt.Errorf("autostart: writing %s: %w", user, err)
	}
	return nil
}

func entry(rest string) []byte {
	var b bytes.Buffer
	b.WriteString("[Desktop Entry]\nType=Application\nName=Skiff tray\n")
	b.WriteString("Comment=Skiff's tray icon at login; the window opens from it\n")
	b.WriteString("Icon=io.github.skiffvpn.skiff\nTerminal=false\nNoDisplay=true\n")
	b.WriteString(rest)
	return b.Bytes()
}

// quoteExec quotes a path for an Exec key (the Desktop Entry spec: a
// double-quoted argument escapes ", `, $ and \, and the value's own
// escapes double the backslashes again).
func quoteExec(p string) string {
	if !strings.ContainsAny(p, " \t\n\"'\\><~|&;$*?#()`%") {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range p {
		switch r {
		case '"', '`', '$':
			b.WriteString(`\\`)
			b.WriteRune(r)
		case '\\':
			b.WriteString(`\\\\`)
		case '%':
			b.WriteString("%%")
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
