package winsmoke

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestProcessLookup runs core/process's own tests, cross-built for
// Windows, under Wine: among them TestFindsItself, which opens a TCP
// connection and finds the test program's path through
// GetExtendedTcpTable and QueryFullProcessImageName. (Wine gives IPv6
// sockets the owner PID 0 and cannot open Go's UDP sockets; the test says
// so in its log rather than claiming those.)
func TestProcessLookup(t *testing.T) {
	w := needWine(t)
	testDir, err := harness.TestDir()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "process.test.exe")
	build := exec.Command("go", "test", "-c", "-o", exe, "./core/process")
	build.Dir = filepath.Dir(testDir)
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build core/process's tests for Windows: %v\n%s", err, out)
	}
	out, err := w.run(t, exe, "-test.v", "-test.count=1")
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("core/process's tests under Wine: %v", err)
	}
	if !strings.Contains(out, "--- PASS: TestFindsItself") || !strings.Contains(out, `Path:`+winPath(exe)) {
		t.Errorf("TestFindsItself did not find %s under Wine", winPath(exe))
	}
}
