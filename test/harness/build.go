package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// SingBoxVersion is the sing-box release the tests and the benchmark run
// against.
const SingBoxVersion = "1.14.1"

// singBoxTags are the build tags sing-box needs for Hysteria2 (QUIC), uTLS
// fingerprints and its gVisor stack.
const singBoxTags = "with_quic,with_utls,with_gvisor"

const testModule = "module github.com/skiffvpn/skiff/test"

// TestDir returns the absolute path of the test module (the folder holding
// test/go.mod), found by walking up from the working directory.
func TestDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), testModule) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("harness: test module (test/go.mod) not found above the working directory")
		}
		dir = parent
	}
}

// BinDir returns test/bin, creating it.
func BinDir() (string, error) {
	dir, err := TestDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin")
	return bin, os.MkdirAll(bin, 0o755)
}

// OutDir returns test/out, where logs of failed tests go, creating it.
func OutDir() (string, error) {
	dir, err := TestDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "out")
	return out, os.MkdirAll(out, 0o755)
}

var (
	skiffOnce   = sync.OnceValues(func() (string, error) { return buildSkiff("skiff", ".", false) })
	windowOnce  = sync.OnceValues(func() (string, error) { return buildSkiff("skiff-window", "./app/skiff-window", true) })
	trayOnce    = sync.OnceValues(func() (string, error) { return buildSkiff("skiff-tray", "./app/skiff-tray", false) })
	singBoxOnce = sync.OnceValues(buildSingBox)
)

// SkiffBinary builds skiff — the command line, `skiff run` and `skiff
// service`, without cgo as every package ships it, so no Fyne — from the
// parent module into test/bin (once per process) and returns its path.
func SkiffBinary() (string, error) { return skiffOnce() }

// SkiffCoreBinary is SkiffBinary: skiff itself is the cgo-free core binary
// since the window became a program of its own (WindowBinary).
func SkiffCoreBinary() (string, error) { return skiffOnce() }

// WindowBinary builds the window, skiff-window (cgo, Fyne), into test/bin
// beside skiff, where `skiff window` looks for it, and returns its path.
func WindowBinary() (string, error) { return windowOnce() }

// NeedWindow is WindowBinary for tests; it builds skiff and skiff-tray as
// well, so that `skiff window` (which runs the skiff-tray next to it, which
// starts the skiff-window beside it) works.
func NeedWindow(t testing.TB) string {
	t.Helper()
	NeedSkiff(t)
	if _, err := trayOnce(); err != nil {
		t.Fatal(err)
	}
	p, err := WindowBinary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// SingBoxBinary installs sing-box SingBoxVersion into test/bin (once per
// process, and only when the binary there is not already that version) and
// returns its path.
func SingBoxBinary() (string, error) { return singBoxOnce() }

// NeedSkiff is SkiffBinary for tests: it fails t when the build fails.
func NeedSkiff(t testing.TB) string {
	t.Helper()
	p, err := SkiffBinary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// NeedSingBox is SingBoxBinary for tests: it fails t when the build fails.
func NeedSingBox(t testing.TB) string {
	t.Helper()
	p, err := SingBoxBinary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func buildSkiff(name, main string, cgo bool) (string, error) {
	bin, err := BinDir()
	if err != nil {
		return "", err
	}
	unlock, err := lockDir(bin)
	if err != nil {
		return "", err
	}
	defer unlock()
	out := filepath.Join(bin, name)
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", out, main)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if cgo {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	cmd.Dir = filepath.Dir(filepath.Dir(bin)) // the repository root, parent of test/
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("harness: go build %s: %v\n%s", main, err, b)
	}
	return out, nil
}

func buildSingBox() (string, error) {
	return buildPeer("sing-box", singBoxIsCurrent, func(bin, out string) error {
		fmt.Fprintf(os.Stderr, "harness: installing sing-box v%s into %s (a few minutes the first time)\n", SingBoxVersion, bin)
		cmd := exec.Command("go", "install", "-buildvcs=false",
			"-tags", singBoxTags,
			"-ldflags", "-X github.com/sagernet/sing-box/constant.Version="+SingBoxVersion,
			"github.com/sagernet/sing-box/cmd/sing-box@v"+SingBoxVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+bin)
		cmd.Dir = bin // outside any module: go install pkg@version ignores it anyway
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("harness: go install sing-box v%s: %v\n%s", SingBoxVersion, err, b)
		}
		return nil
	})
}

// buildPeer makes test/bin/NAME with build, under the bin folder's lock,
// unless current says the binary there is already the wanted one, and
// checks it with current again afterwards.
func buildPeer(name string, current func(path string) bool, build func(bin, out string) error) (string, error) {
	bin, err := BinDir()
	if err != nil {
		return "", err
	}
	unlock, err := lockDir(bin)
	if err != nil {
		return "", err
	}
	defer unlock()
	out := filepath.Join(bin, name)
	if current(out) {
		return out, nil
	}
	if err := build(bin, out); err != nil {
		return "", err
	}
	if !current(out) {
		return "", fmt.Errorf("harness: %s is not the wanted version after the build", out)
	}
	return out, nil
}

// singBoxIsCurrent reports whether path is a sing-box of SingBoxVersion.
func singBoxIsCurrent(path string) bool {
	b, err := exec.Command(path, "version").Output()
	if err != nil {
		return false
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	return strings.TrimSpace(string(first)) == "sing-box version "+SingBoxVersion
}

// lockDir takes an exclusive lock on dir/.lock so that test processes
// running in parallel (one per package) do not build into dir at once.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("harness: lock %s: %w", dir, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
