package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestWindowMissing: without skiff-tray next to the executable (the test
// binary's folder has none), skiff without a command says what is missing
// and how to get it, and fails.
func TestWindowMissing(t *testing.T) {
	path, err := launchPath()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Main(nil, nil, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut.String())
	}
	for _, want := range []string{LaunchProgram, path, "make build", "skiff help"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("the message lacks %q:\n%s", want, errOut.String())
		}
	}
}
