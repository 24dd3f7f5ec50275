package measure

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestProcFigures(t *testing.T) {
	// Burn CPU until a clock tick has been charged to this process.
	deadline := time.Now().Add(5 * time.Second)
	for CPUSeconds(os.Getpid()) <= 0 && time.Now().Before(deadline) {
		x := 0
		for i := range 1_000_000 {
			x += i * i
		}
		burnSink = x
	}
	if CPUSeconds(os.Getpid()) <= 0 {
		t.Error("CPUSeconds of this process stays 0")
	}
	if CPUSeconds(0) != 0 {
		t.Error("CPUSeconds(0) is not 0")
	}
	// Spinning in user code charges user time, not system time.
	u0, s0 := CPUSplit(os.Getpid())
	for u, _ := CPUSplit(os.Getpid()); u <= u0 && time.Now().Before(deadline.Add(5*time.Second)); u, _ = CPUSplit(os.Getpid()) {
		x := 0
		for i := range 1_000_000 {
			x += i * i
		}
		burnSink = x
	}
	if u1, s1 := CPUSplit(os.Getpid()); u1 <= u0 || s1 < s0 {
		t.Errorf("CPUSplit went from user %v, system %v to %v, %v while spinning", u0, s0, u1, s1)
	}
	if u, s := CPUSplit(0); u != 0 || s != 0 {
		t.Error("CPUSplit(0) is not 0, 0")
	}
	for _, field := range []string{"VmRSS", "VmHWM"} {
		v, err := MemMiB(os.Getpid(), field)
		if err != nil || v <= 0 {
			t.Errorf("MemMiB(%s) = %v, %v", field, v, err)
		}
	}
}

// burnSink keeps the CPU-burning loop from being optimised away.
var burnSink int

func TestRatio(t *testing.T) {
	tests := []struct{ a, b, want float64 }{
		{3, 2, 1.5},
		{3, 0, 0},
		{0, 2, 0},
	}
	for _, tt := range tests {
		if got := Ratio(tt.a, tt.b); got != tt.want {
			t.Errorf("Ratio(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestEfficiency(t *testing.T) {
	var f Figures
	for _, s := range []Sample{{Mbps: 100, ClientCores: 0.5}, {Mbps: 300, ClientCores: 1}, {Mbps: 50, ClientCores: 0}} {
		f.Add(s)
	}
	if got := f.MedianMbps(); got != 100 {
		t.Errorf("MedianMbps = %v, want 100", got)
	}
	// The run with no client CPU counted is left out: median of 200 and 300.
	if got := f.Efficiency(); got != 250 {
		t.Errorf("Efficiency = %v, want 250", got)
	}
}

func TestReadPhase(t *testing.T) {
	pprof := map[string]string{
		"b/heap?debug=1":      "heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 3145728\n# HeapAlloc = 3145728\n# HeapInuse = 4194304\n",
		"b/goroutine?debug=1": "goroutine profile: total 17\n5 @ 0x1\n",
	}
	get := func(m map[string]string) func(string) (string, error) {
		return func(u string) (string, error) {
			if s, ok := m[u]; ok {
				return s, nil
			}
			return "", errors.New("404")
		}
	}
	tests := []struct {
		name     string
		rt       Runtime
		wantHeap float64
		wantGor  int
	}{
		{"no runtime (sing-box)", nil, -1, -1},
		{"pprof", PprofRuntime("b/", get(pprof)), 3, 17},
		{"pprof down", PprofRuntime("b/", get(nil)), -1, -1},
		{"pprof without HeapAlloc", PprofRuntime("b/", get(map[string]string{"b/heap?debug=1": "# HeapInuse = 1\n", "b/goroutine?debug=1": "goroutine profile: total 3\n"})), -1, -1},
		{"service API", func() (uint64, int, error) { return 5 << 20, 40, nil }, 5, 40},
		{"service API fails", func() (uint64, int, error) { return 0, 0, errors.New("refused") }, -1, -1},
	}
	for _, tt := range tests {
		f := ReadPhase(os.Getpid(), tt.rt)
		if f.HeapMiB != tt.wantHeap || f.Goroutines != tt.wantGor {
			t.Errorf("%s: heap %v MiB, %d goroutines; want %v, %d", tt.name, f.HeapMiB, f.Goroutines, tt.wantHeap, tt.wantGor)
		}
		if f.RSSMiB <= 0 {
			t.Errorf("%s: RSS %v MiB, want this process's", tt.name, f.RSSMiB)
		}
	}
}
