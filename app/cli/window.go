package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WindowProgram is the window's executable: a program of its own (Fyne,
// cgo) so that skiff, and with it the service, never links Fyne. skiff
// looks for it next to its own executable, where every package puts it.
const WindowProgram = "skiff-window"

func init() {
	commands["window"] = command{"open the window (the default without a command; the program " + WindowProgram + ")", runWindow}
	commands["gui"] = command{"the same as window", runWindow}
}

// windowPath returns the window program next to this executable.
func windowPath() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("finding skiff's own executable: %w", err)
	}
	name := WindowProgram
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(filepath.Dir(exe), name), nil
}

// runWindow implements `skiff window` (and skiff without a command): it
// starts the window program with the same arguments. On Unix it replaces
// this process (the window keeps skiff's process id and its terminal); on
// Windows it starts the GUI program and returns.
func runWindow(args []string, _ io.Reader, _, stderr io.Writer) int {
	path, err := windowPath()
	if err == nil {
		_, err = os.Stat(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "skiff: the window is the program %s, which is not installed next to skiff (%s).\n"+
			"Install Skiff's package (deb, rpm, the Windows installer or the macOS pkg ship both), or build it from source: make build (bin/%s).\n"+
			"Without it skiff works from the command line: skiff help.\n", WindowProgram, path, WindowProgram)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff: %v\n", err)
		return 1
	}
	if err := startWindow(path, args); err != nil {
		fmt.Fprintf(stderr, "skiff: starting the window %s: %v\n", path, err)
		return 1
	}
	return 0
}
