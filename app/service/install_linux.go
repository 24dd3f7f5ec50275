package service

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"

	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// unitPath is where Install writes the unit.
const unitPath = "/etc/systemd/system/" + Name + ".service"

// copiedBinary is where Install copies a binary that is not root's.
const copiedBinary = "/usr/local/lib/skiff/skiff"

// Install makes exe the systemd service: the operators' group (created if
// missing), the unit, then enabled and started. Run as root. An exe that
// is not root's (a build tree's) is copied to copiedBinary first, and the
// unit runs the copy (serviceBinary).
func Install(exe string, out io.Writer) error {
	exe, err := serviceBinary(exe, copiedBinary, out)
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if _, err := user.LookupGroup(Group); err != nil {
		if err := run(out, "groupadd", "--system", Group); err != nil {
			return fmt.Errorf("service install: create group %s: %w", Group, err)
		}
		fmt.Fprintf(out, "created group %s: add the users who may operate Skiff with  sudo usermod -aG %s USER\n", Group, Group)
	}
	if err := atomicfile.WriteFile(unitPath, []byte(Unit(exe)), 0o644); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	fmt.Fprintf(out, "wrote %s\n", unitPath)
	if err := run(out, "systemctl", "daemon-reload"); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if err := run(out, "systemctl", "enable", "--now", Name+".service"); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	return nil
}

// Uninstall stops and removes the service. The group and the state in
// DefaultStateDir stay (a reinstall finds the profile).
func Uninstall(out io.Writer) error {
	var errs []error
	if err := run(out, "systemctl", "disable", "--now", Name+".service"); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(unitPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	} else if err == nil {
		fmt.Fprintf(out, "removed %s\n", unitPath)
	}
	if err := run(out, "systemctl", "daemon-reload"); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	return nil
}
