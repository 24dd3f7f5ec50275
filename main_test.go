package main

import (
	"runtime"
	"testing"
)

// TestHeapProfilerOff checks that the program starts with the heap
// profiler off: its table of sampled stacks costs memory nobody reads
// unless `skiff run --pprof` turns it on.
func TestHeapProfilerOff(t *testing.T) {
	if runtime.MemProfileRate != 0 {
		t.Fatalf("runtime.MemProfileRate = %d at start, want 0", runtime.MemProfileRate)
	}
}
