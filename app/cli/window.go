package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/skiffvpn/skiff/internal/selfexe"
)

// LaunchProgram is what `skiff` without a command runs: skiff-tray, which
// decides what to start (the tray and the window with a service, else the
// window with the core inside: the window is a program of its own, Fyne
// and cgo, so that skiff, and with it the service, never links Fyne).
// skiff looks for it next to its own executable, where every package puts
// it (and the window beside it).
const LaunchProgram = "skiff-tray"

func init() {
	commands["window"] = command{"open the window (the default without a command; the program " + LaunchProgram + " starts it)", runWindow}
	commands["gui"] = command{"the same as window", runWindow}
}

// launchPath returns the launch program next to this executable.
func launchPath() (string, error) {
	path, err := selfexe.Beside(LaunchProgram)
	if err != nil {
		return "", fmt.Errorf("finding skiff's own executable: %w", err)
	}
	return path, nil
}

// runWindow implements `skiff window` (and skiff without a command): it
// runs skiff-tray --open with the same arguments (the window's flags, a
// deep link). On Unix it replaces this process (keeping skiff's process id
// and its terminal); on Windows it starts the GUI program and returns.
func runWindow(args []string, _ io.Reader, _, stderr io.Writer) int {
	path, err := launchPath()
	if err == nil {
		_, err = os.Stat(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "skiff: the window is started by the program %s, which is not installed next to skiff (%s).\n"+
			"Install Skiff's package (deb, rpm, the Windows installer or the macOS pkg ship them), or build it from source: make build (bin/%s and bin/skiff-window).\n"+
			"Without it skiff works from the command line: skiff help.\n", LaunchProgram, path, LaunchProgram)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff: %v\n", err)
		return 1
	}
	if err := startWindow(path, append([]string{"--open"}, args...)); err != nil {
		fmt.Fprintf(stderr, "skiff: starting %s: %v\n", path, err)
		return 1
	}
	return 0
}
