package app

import "testing"

func TestMiBString(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "0 MiB"},
		{512<<10 - 1, "0 MiB"},
		{512 << 10, "1 MiB"},
		{35<<20 + 100<<10, "35 MiB"},
		{35<<20 + 600<<10, "36 MiB"},
	} {
		if got := mibString(c.n); got != c.want {
			t.Errorf("mibString(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
