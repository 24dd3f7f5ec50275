package crashwatch

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The test binary is also the watched process (roleEnv) and, started by
// Watch, the monitor (MaybeMonitor).
const roleEnv = "CRASHWATCH_TEST_ROLE"

func TestMain(m *testing.M) {
	MaybeMonitor()
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runWatched(role, os.Getenv("CRASHWATCH_TEST_STATE")))
	}
	os.Exit(m.Run())
}

// runWatched records a change in a state file, as tun.Open does, starts the
// monitor and ends as role says.
func runWatched(role, state string) int {
	rec := fmt.Sprintf(`{"version":1,"pid":%d,"os":%q,"changes":[{"kind":"link","link":"skiff-gone-0"}]}`, os.Getpid(), runtime.GOOS)
	if err := os.WriteFile(state, []byte(rec), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if err := Watch(state, slog.New(slog.DiscardHandler)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	switch role {
	case "panic":
		go func() { panic("an engine goroutine panics") }()
		time.Sleep(10 * time.Second)
	case "exit":
		return 0 // a clean exit that did not restore (as after kill -9)
	}
	return 4
}

func TestMonitorRestoresAfterPanic(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the recorded change is undone by tun's Linux code")
	}
	for _, tc := range []struct {
		role     string
		restored bool
	}{
		{"panic", true},
		{"exit", false},
	} {
		t.Run(tc.role, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "tun-state.json")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), roleEnv+"="+tc.role, "CRASHWATCH_TEST_STATE="+state)
			var out strings.Builder
			cmd.Stderr = &out
			err := cmd.Run() // returns once the monitor, which shares stderr, is done too
			if tc.role == "panic" && (err == nil || !strings.Contains(out.String(), "an engine goroutine panics")) {
				t.Fatalf("the watched process did not panic: %v\n%s", err, out.String())
			}
			if tc.role == "exit" && err != nil {
				t.Fatalf("the watched process: %v\n%s", err, out.String())
			}
			_, statErr := os.Stat(state)
			if restored := os.IsNotExist(statErr); restored != tc.restored {
				t.Errorf("%s: state file restored = %v, want %v\n%s", tc.role, restored, tc.restored, out.String())
			}
			if tc.restored && !strings.Contains(out.String(), "routes and rules restored after the crash") {
				t.Errorf("the monitor did not say it restored:\n%s", out.String())
			}
		})
	}
}
