package selfexe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestMain: run through a link by TestThroughSymlink, the test binary
// prints what Path and Beside find.
func TestMain(m *testing.M) {
	if os.Getenv("SELFEXE_PRINT") == "1" {
		exe, err := Path()
		beside, err2 := Beside("skiff-window")
		fmt.Printf("%s\n%s\n%v %v\n", exe, beside, err, err2)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestThroughSymlink: started through a symlink in another folder, the
// program still finds itself, and its neighbours, where the real file is.
func TestThroughSymlink(t *testing.T) {
	self, err := filepath.EvalSymlinks(os.Args[0])
	if err == nil {
		self, err = filepath.Abs(self)
	}
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(self, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	cmd := exec.Command(link)
	cmd.Env = append(os.Environ(), "SELFEXE_PRINT=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	window := filepath.Join(filepath.Dir(self), "skiff-window")
	if runtime.GOOS == "windows" {
		window += ".exe"
	}
	if want := self + "\n" + window + "\n<nil> <nil>\n"; string(out) != want {
		t.Errorf("through %s the program printed\n%s\nwant\n%s", link, out, want)
	}
}
