package winsmoke

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestAutostartRunValue runs app/autostart's own Windows test
// (TestRunValue: Start at login on, off, off again, on, off through the
// user's HKCU Run value) under Wine, then checks with reg.exe that it
// left the value absent.
func TestAutostartRunValue(t *testing.T) {
	w := needWine(t)
	exe := filepath.Join(t.TempDir(), "autostart.test.exe")
	build := exec.Command("go", "test", "-c", "-o", exe, "./app/autostart")
	testDir, err := harness.TestDir()
	if err != nil {
		t.Fatal(err)
	}
	build.Dir = filepath.Dir(testDir) // the main module
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building app/autostart's test for Windows: %v\n%s", err, out)
	}
	out, err := w.run(t, exe, "-test.v", "-test.run", "^TestRunValue$")
	if err != nil || !strings.Contains(out, "--- PASS: TestRunValue") {
		t.Fatalf("TestRunValue under Wine: %v\n%s", err, out)
	}
	if v := w.regValueOf(t, `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`, "Skiff"); v != "" {
		t.Errorf("the Run value after the last Disable: %q", v)
	}
}
