package winsmoke

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/test/harness"
)

// runPkgTests cross-builds pkg's tests for Windows and runs those matching
// run under Wine, returning the test program's path and its output.
func runPkgTests(t *testing.T, w *wine, pkg, run string) (exe, out string, err error) {
	t.Helper()
	testDir, err := harness.TestDir()
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(t.TempDir(), filepath.Base(pkg)+".test.exe")
	build := exec.Command("go", "test", "-c", "-o", exe, pkg)
	build.Dir = filepath.Dir(testDir)
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s's tests for Windows: %v\n%s", pkg, err, out)
	}
	args := []string{"-test.v", "-test.count=1"}
	if run != "" {
		args = append(args, "-test.run", run)
	}
	out, err = w.run(t, exe, args...)
	t.Logf("%s", out)
	return exe, out, err
}

// TestStateDirAndPipe runs, under Wine, the Windows tests of the state
// directory's ACL and the service's pipe (issue 28): Windows' own parse of
// the SDDL strings (protected, SYSTEM and Administrators full control; the
// members' pipe rights without FILE_CREATE_PIPE_INSTANCE), the directory
// made and refused closed because Wine keeps no file ACLs, a pipe that
// SYSTEM and the Administrators do not own refused by the client, and
// install's copy of an executable outside Program Files.
func TestStateDirAndPipe(t *testing.T) {
	w := needWine(t)
	for _, tc := range []struct {
		pkg, run string
		want     []string
	}{
		{"./internal/rootdir", "", []string{"--- PASS: TestDirSDDLParsed", "--- PASS: TestEnsureWindows", "under Wine, refused", "--- PASS: TestProgramData"}},
		{"./app/service", "Pipe|ServiceBinary", []string{"--- PASS: TestPipeSDDLParsed", "--- PASS: TestPipe ", "not the Skiff service's", "--- PASS: TestServiceBinaryWindows"}},
	} {
		_, out, err := runPkgTests(t, w, tc.pkg, tc.run)
		if err != nil {
			t.Errorf("%s's tests under Wine: %v", tc.pkg, err)
		}
		for _, s := range tc.want {
			if !strings.Contains(out, s) {
				t.Errorf("%s under Wine: no %q", tc.pkg, s)
			}
		}
	}
}
