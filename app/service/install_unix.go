//go:build linux || darwin

package service

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
)

// run runs a system tool (systemctl, launchctl, groupadd), its output to
// out.
func run(out io.Writer, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return nil
}
