// Package version holds the version and the commit skiff was built from.
// The release build sets both with the linker
// (-X github.com/skiffvpn/skiff/internal/version.version=0.1.0 and
// ...commit=abc1234, as the Makefile does); a plain `go build` falls back to
// what the Go toolchain recorded about the checkout, so that a binary always
// says where it came from.
package version

import (
	"runtime/debug"
	"strings"
)

// Set by the linker; empty in a plain `go build`.
var (
	version string
	commit  string
)

// Info is what a build says about itself.
type Info struct {
	Version string // e.g. "0.1.0", or "dev" when the build did not set it
	Commit  string // the source commit, shortened; "" when unknown
	Dirty   bool   // the checkout had uncommitted changes (toolchain-recorded builds only)
}

// Get returns this binary's version and commit.
func Get() Info {
	return get(version, commit, readBuildInfo)
}

func readBuildInfo() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

func get(v, c string, read func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: v, Commit: c}
	if in.Commit == "" {
		if bi, ok := read(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					in.Commit = s.Value
				case "vcs.modified":
					in.Dirty = s.Value == "true"
				}
			}
		}
	}
	if len(in.Commit) > 12 {
		in.Commit = in.Commit[:12]
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	in.Version = strings.TrimPrefix(in.Version, "v")
	return in
}

// String is the one-line form `skiff --version` prints and the window's
// Settings shows: "0.1.0 (commit 1a2b3c4d5e6f)".
func (in Info) String() string {
	s := in.Version
	switch {
	case in.Commit != "" && in.Dirty:
		s += " (commit " + in.Commit + ", modified)"
	case in.Commit != "":
		s += " (commit " + in.Commit + ")"
	}
	return s
}
