package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCleanupCommand(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		state    string // content of the state file; "" for none
		wantCode int
		wantOut  string
	}{
		{name: "no state file", wantCode: 0, wantOut: "nothing to clean"},
		{
			// A run that crashed (pid 0 is never alive) after recording a
			// device that is gone: nothing to undo, the file goes.
			name:     "leftovers of a crashed run",
			state:    `{"version":1,"pid":0,"os":"linux","changes":[{"kind":"link","link":"skiff-none0"}]}`,
			wantCode: 0,
			wantOut:  "restored",
		},
		{name: "corrupt state file", state: `{`, wantCode: 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "state"+string(rune('a'+i))+".json")
			if tt.state != "" {
				if err := os.WriteFile(path, []byte(tt.state), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out, errOut bytes.Buffer
			code := Main([]string{"cleanup", "--state", path}, nil, &out, &errOut)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.wantCode, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q, want %q", out.String(), tt.wantOut)
			}
			if code == 0 {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("state file still there: %v", err)
				}
			}
		})
	}
}
