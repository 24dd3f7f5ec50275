package preset

import (
	"testing"

	"github.com/skiffvpn/skiff/core"
)

func TestTargetsAreTheCores(t *testing.T) {
	if targetDirect != core.TargetDirect || targetProxy != core.TargetProxy {
		t.Fatal("the presets' target names are not the core's")
	}
}
