package sysproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// runner runs a program and returns its standard output. Stores take one,
// so that tests can check the commands a store would run on a system this
// machine is not (macOS, KDE).
type runner func(ctx context.Context, name string, args ...string) (string, error)

// toolTime bounds one settings tool's run: they answer in milliseconds,
// but one waiting on a D-Bus that never answers must not hang a quit.
const toolTime = 10 * time.Second

// execRunner runs the program; a failure carries the program's own message.
func execRunner(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		if msg != "" {
			return out.String(), fmt.Errorf("%s %s: %w: %s", name, args[0], err, msg)
		}
		return out.String(), fmt.Errorf("%s %s: %w", name, args[0], err)
	}
	return out.String(), nil
}

// errNotFound says a settings tool is missing.
var errNotFound = errors.New("not installed")

// have checks that a program is on PATH.
func have(name string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("%s: %w", name, errNotFound)
	}
	return nil
}

// tools runs the settings programs: the system's, or a test's.
type tools struct {
	run  runner
	look func(name string) error // nil: have
}

func (t tools) has(name string) error {
	if t.look != nil {
		return t.look(name)
	}
	return have(name)
}
