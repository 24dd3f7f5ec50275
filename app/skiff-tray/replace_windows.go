package main

import "os/exec"

// replace starts the program path with args, a GUI-subsystem executable
// with no console to share, and leaves it running; the caller exits.
func replace(path string, args []string) error {
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
