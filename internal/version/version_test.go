package version

import (
	"runtime/debug"
	"testing"
)

func TestGet(t *testing.T) {
	vcs := func(rev, modified string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified},
			}}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	tests := []struct {
		name, v, c string
		read       func() (*debug.BuildInfo, bool)
		want       string
	}{
		{"linker", "0.1.0", "1a2b3c4", vcs("ffff", "true"), "0.1.0 (commit 1a2b3c4)"},
		{"linker v prefix", "v0.2.0", "abc", none, "0.2.0 (commit abc)"},
		{"toolchain", "", "", vcs("0123456789abcdef0123", "false"), "dev (commit 0123456789ab)"},
		{"toolchain dirty", "0.1.0", "", vcs("0123456789abcdef0123", "true"), "0.1.0 (commit 0123456789ab, modified)"},
		{"nothing", "", "", none, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := get(tt.v, tt.c, tt.read).String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
