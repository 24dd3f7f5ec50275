package autostart

import (
	"testing"

	"golang.org/x/sys/windows/registry"
)

// TestRunValue: on, off and off again go to the user's Run value, which
// holds the tray's quoted path (run under Wine: test/winsmoke).
func TestRunValue(t *testing.T) {
	it := &Item{Tray: `C:\Program Files\Skiff\skiff-tray.exe`}
	read := func() (string, bool) {
		k, err := registry.OpenKey(registry.CURRENT_USER, RunKey, registry.QUERY_VALUE)
		if err != nil {
			return "", false
		}
		defer k.Close()
		v, _, err := k.GetStringValue(RunValue)
		return v, err == nil
	}
	for i, on := range []bool{true, false, false, true, false} {
		if err := it.Set(on); err != nil {
			t.Fatalf("step %d: Set(%v): %v", i, on, err)
		}
		got, err := it.Enabled()
		if err != nil || got != on {
			t.Fatalf("step %d: Enabled = %v, %v; want %v", i, got, err, on)
		}
		v, ok := read()
		if ok != on || (on && v != `"C:\Program Files\Skiff\skiff-tray.exe"`) {
			t.Errorf("step %d: the Run value is %q (present %v)", i, v, ok)
		}
	}
	if err := (&Item{}).Enable(); err == nil {
		t.Error("Enable without a tray path succeeded")
	}
}
