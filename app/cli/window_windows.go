package cli

import "os/exec"

// startWindow starts the program path (a GUI-subsystem executable, which
// has no console to share) and leaves it running.
func startWindow(path string, args []string) error {
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
