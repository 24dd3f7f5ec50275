package winsmoke

import (
	"strings"
	"testing"
)

// TestProcessLookup runs core/process's own tests, cross-built for
// Windows, under Wine: among them TestFindsItself, which opens a TCP
// connection and finds the test program's path through
// GetExtendedTcpTable and QueryFullProcessImageName. (Wine gives IPv6
// sockets the owner PID 0 and cannot open Go's UDP sockets; the test says
// so in its log rather than claiming those.)
func TestProcessLookup(t *testing.T) {
	w := needWine(t)
	exe, out, err := runPkgTests(t, w, "./core/process", "")
	if err != nil {
		t.Fatalf("core/process's tests under Wine: %v", err)
	}
	if !strings.Contains(out, "--- PASS: TestFindsItself") || !strings.Contains(out, `Path:`+winPath(exe)) {
		t.Errorf("TestFindsItself did not find %s under Wine", winPath(exe))
	}
}
