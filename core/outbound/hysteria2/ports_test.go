package hysteria2

import "testing"

func TestParsePorts(t *testing.T) {
	tests := []struct {
		in      string
		want    portSet
		wantErr bool
	}{
		{"443", portSet{{443, 443}}, false},
		{"443,5000-6000", portSet{{443, 443}, {5000, 6000}}, false},
		{" 80 , 90-91 ", portSet{{80, 80}, {90, 91}}, false},
		{"1-65535", portSet{{1, 65535}}, false},
		{"", nil, true},
		{"443,", nil, true},
		{"0", nil, true},
		{"65536", nil, true},
		{"6000-5000", nil, true},
		{"a-b", nil, true},
		{"1-2-3", nil, true},
	}
	for _, tt := range tests {
		got, err := parsePorts(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parsePorts(%q): err %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("parsePorts(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("parsePorts(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

func TestPortSetPick(t *testing.T) {
	set, err := parsePorts("443,5000-5002")
	if err != nil {
		t.Fatal(err)
	}
	if set.size() != 4 {
		t.Fatalf("size %d, want 4", set.size())
	}
	seen := map[uint16]int{}
	for range 4000 {
		seen[set.pick()]++
	}
	for _, p := range []uint16{443, 5000, 5001, 5002} {
		if seen[p] < 700 { // expect ~1000 each
			t.Errorf("port %d picked %d times of 4000", p, seen[p])
		}
	}
	if len(seen) != 4 {
		t.Errorf("picked ports %v, want only 443 and 5000-5002", seen)
	}
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"443", "443,5000-6000", "1-65535", "-", ",,", "99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := parsePorts(s)
		if err != nil {
			return
		}
		for _, r := range set {
			if r.lo == 0 || r.hi < r.lo {
				t.Fatalf("%q parsed to bad range %v", s, r)
			}
		}
		p := set.pick()
		in := false
		for _, r := range set {
			in = in || (p >= r.lo && p <= r.hi)
		}
		if !in {
			t.Fatalf("picked %d outside %v", p, set)
		}
	})
}
