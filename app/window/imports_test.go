package window

import (
	"go/build"
	"strings"
	"testing"
)

// TestBuildsNoOutbound: the window is a front end. It asks the core for
// latency (Backend.Probe) and never builds a protocol client itself, so
// it imports neither core/protocol nor any outbound package.
func TestBuildsNoOutbound(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if imp == "github.com/skiffvpn/skiff/core/protocol" || strings.HasPrefix(imp, "github.com/skiffvpn/skiff/core/outbound") {
			t.Errorf("the window imports %s", imp)
		}
	}
}
