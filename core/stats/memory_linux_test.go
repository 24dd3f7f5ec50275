package stats

import "testing"

func TestParseVmRSS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"Name:\tskiff\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads: 5\n", 1234 << 10, true},
		{"Name:\tskiff\n", 0, false},
		{"VmRSS:\tlots kB\n", 0, false},
	} {
		got, ok := parseVmRSS([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseVmRSS(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
