package procs

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestGovernorSteps(t *testing.T) {
	p := DefaultPolicy()
	tests := []struct {
		name    string
		samples []float64 // cores, one per tick
		want    []int     // the Ps after each tick
	}{
		{"light load stays on one P", []float64{0.2, 0.7, 0.9, 0.94, 0.6}, []int{1, 1, 1, 1, 1}},
		{"a saturated P for 3 s goes up", []float64{1.0, 1.1, 0.97}, []int{1, 1, 4}},
		{"a dip resets the count", []float64{1.0, 1.0, 0.8, 1.0, 1.0, 1.0}, []int{1, 1, 1, 1, 1, 4}},
		{"down after 10 s of light load", []float64{1, 1, 1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1},
			[]int{1, 1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1}},
		{"heavy load keeps the Ps", []float64{1, 1, 1, 1.6, 0.4, 0.7, 0.4, 0.4}, []int{1, 1, 4, 4, 4, 4, 4, 4}},
		{"a busy second among light ones keeps them", []float64{1, 1, 1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1},
			[]int{1, 1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := 1
			var calls []int
			g := governor{p: p, full: 4, procs: 1, set: func(n int) int {
				old := cur
				cur = n
				calls = append(calls, n)
				return old
			}}
			for i, c := range tt.samples {
				g.sample(c)
				if cur != tt.want[i] || g.procs != cur {
					t.Fatalf("after sample %d (%.2f cores): Ps %d (governor thinks %d), want %d", i, c, cur, g.procs, tt.want[i])
				}
			}
			for i := 1; i < len(calls); i++ {
				if calls[i] == calls[i-1] {
					t.Errorf("set(%d) twice in a row: %v", calls[i], calls)
				}
			}
		})
	}
}

// TestGovernRestores runs the real loop briefly: it takes the process to
// one P and gives the runtime its Ps back when stopped.
func TestGovernRestores(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // an inherited setting would switch Govern off
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: Govern has nothing to do")
	}
	runtime.SetDefaultGOMAXPROCS()
	full := runtime.GOMAXPROCS(0)
	stop := Start(context.Background(), Policy{Every: 10 * time.Millisecond, UpCPU: 100, UpAfter: 1, DownCPU: 0, DownAfter: 1}, nil)
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != 1 {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("Govern did not go to one P (GOMAXPROCS %d)", runtime.GOMAXPROCS(0))
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	if got := runtime.GOMAXPROCS(0); got != full {
		t.Errorf("after stop GOMAXPROCS = %d, want %d", got, full)
	}
}

// TestFollow: the governor runs while on holds, and only then.
func TestFollow(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: Govern has nothing to do")
	}
	runtime.SetDefaultGOMAXPROCS()
	full := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	running := false
	set := func(v bool) { mu.Lock(); running = v; mu.Unlock() }
	on := func() bool { mu.Lock(); defer mu.Unlock(); return running }
	changes := make(chan struct{})
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		Follow(ctx, DefaultPolicy(), nil, changes, on)
	}()
	waitProcs := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.GOMAXPROCS(0) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: GOMAXPROCS %d, want %d", what, runtime.GOMAXPROCS(0), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	changes <- struct{}{} // off, off: nothing runs
	if got := runtime.GOMAXPROCS(0); got != full {
		t.Fatalf("governed while off: GOMAXPROCS %d", got)
	}
	set(true)
	changes <- struct{}{}
	waitProcs("on", 1)
	set(false)
	changes <- struct{}{}
	waitProcs("off again", full)
	set(true)
	changes <- struct{}{}
	waitProcs("on again", 1)
	cancel() // ending Follow ends its governor
	<-done
	if got := runtime.GOMAXPROCS(0); got != full {
		t.Errorf("after Follow ended: GOMAXPROCS %d, want %d", got, full)
	}
}

// TestGovernLeavesUserSetting: GOMAXPROCS set by the user stands.
func TestGovernLeavesUserSetting(t *testing.T) {
	t.Setenv("GOMAXPROCS", "3")
	before := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(context.Background())
	stop := Start(ctx, DefaultPolicy(), nil)
	time.Sleep(20 * time.Millisecond)
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS changed to %d with the user's setting in place (was %d)", got, before)
	}
	cancel()
	stop()
}

// TestProcessCPU spins until the process clock shows 20 ms of CPU, on a
// wall-clock bound: on a loaded machine the spinning goroutine gets only a
// share of a core, so a fixed spin of wall time proves nothing.
func TestProcessCPU(t *testing.T) {
	a, err := processCPU()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		end := time.Now().Add(10 * time.Millisecond)
		for time.Now().Before(end) {
		}
		b, err := processCPU()
		if err != nil {
			t.Fatal(err)
		}
		d := b - a
		if d >= 20*time.Millisecond {
			if wall := time.Since(start); d > wall*time.Duration(runtime.NumCPU())+10*time.Millisecond {
				t.Errorf("%v of CPU counted in %v of wall time on %d CPUs", d, wall, runtime.NumCPU())
			}
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("10 s of spinning counted as %v of CPU", d)
		}
	}
}
