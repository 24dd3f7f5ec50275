package core

import (
	"slices"
	"testing"
)

// TestTrimmer checks when memory is handed back: after most of a burst of
// connections closed, after traffic went quiet following a busy tick, each
// with its follow-up, and not while traffic flows or stays small.
func TestTrimmer(t *testing.T) {
	const busy, quiet = trimBusyBytes, trimQuietBytes / 2
	type step struct {
		conns int
		moved int64 // bytes relayed in the tick
	}
	tests := []struct {
		name  string
		steps []step
		want  []int // ticks (0-based) that trim
	}{
		{"nothing happens", []step{{0, 0}, {2, 100}, {2, 0}, {0, 0}}, nil},
		{"small burst of connections", []step{{10, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}, nil},
		{"burst of connections closes", []step{{500, 0}, {400, 0}, {100, 0}, {100, 0}, {100, 0}, {100, 0}, {100, 0}},
			[]int{2, 5}},
		{"traffic goes quiet, connections stay", []step{{500, busy}, {500, busy}, {500, quiet}, {500, quiet}, {500, quiet}, {500, quiet}, {500, quiet}},
			[]int{2, 5}},
		{"steady traffic", []step{{16, busy}, {16, busy}, {16, busy}, {16, busy}}, nil},
		{"slow traffic never trims", []step{{1, busy / 4}, {1, 0}, {1, busy / 4}, {1, 0}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr trimmer
			var total int64
			var got []int
			for i, s := range tt.steps {
				total += s.moved
				if tr.tick(s.conns, total) {
					got = append(got, i)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("trims at ticks %v, want %v", got, tt.want)
			}
		})
	}
}
