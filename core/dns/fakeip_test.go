package dns

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
)

func TestPoolDefault(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Size() != DefaultPoolSize || p.Prefix4() != DefaultPrefix4 || p.Prefix6() != DefaultPrefix6 {
		t.Fatalf("defaults: size %d, %s, %s", p.Size(), p.Prefix4(), p.Prefix6())
	}
	tests := []struct {
		name   string
		v4, v6 string
	}{
		{"a.example", "198.18.0.2", "fdfe:dcba:9876:18::2"},
		{"b.example", "198.18.0.3", "fdfe:dcba:9876:18::3"},
		{"a.example", "198.18.0.2", "fdfe:dcba:9876:18::2"}, // stable
	}
	for _, tt := range tests {
		v4, v6 := p.Lookup(tt.name)
		if v4.String() != tt.v4 || v6.String() != tt.v6 {
			t.Errorf("Lookup(%q) = %s, %s; want %s, %s", tt.name, v4, v6, tt.v4, tt.v6)
		}
		for _, ip := range []netip.Addr{v4, v6, netip.AddrFrom16(v4.As16())} {
			if got, ok := p.Name(ip); !ok || got != tt.name {
				t.Errorf("Name(%s) = %q, %v; want %q", ip, got, ok, tt.name)
			}
			if !p.Contains(ip) {
				t.Errorf("Contains(%s) = false", ip)
			}
		}
	}
	for _, s := range []string{"198.18.0.0", "198.18.0.1", "198.18.0.4", "198.19.255.255", "fdfe:dcba:9876:18::1",
		"fdfe:dcba:9876:18::4", "10.0.0.1", "fdfe:dcba:9876:19::2", "::ffff:10.0.0.1"} {
		if name, ok := p.Name(netip.MustParseAddr(s)); ok {
			t.Errorf("Name(%s) = %q; want none", s, name)
		}
	}
	if p.Contains(netip.MustParseAddr("198.20.0.1")) || p.Contains(netip.MustParseAddr("fdfe:dcba:9876::1")) {
		t.Error("Contains is true outside the ranges")
	}
	if p.Len() != 2 {
		t.Errorf("Len = %d; want 2", p.Len())
	}
}

func TestPoolLRU(t *testing.T) {
	p, err := NewPool(PoolConfig{Prefix4: netip.MustParsePrefix("10.99.0.0/29"), Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Lookup("a")
	b, _ := p.Lookup("b")
	c, _ := p.Lookup("c")
	p.Name(a)              // a in use again: b is now the least recently used
	d, v6 := p.Lookup("d") // takes b's address
	if d != b || v6.IsValid() {
		t.Fatalf("d got %s (v6 %s); want b's address %s and no IPv6", d, v6, b)
	}
	if _, ok := p.Name(b); ok {
		if n, _ := p.Name(b); n != "d" {
			t.Fatalf("b's address now names %q; want d", n)
		}
	}
	if got, _ := p.Lookup("a"); got != a {
		t.Fatalf("a moved from %s to %s", a, got)
	}
	e, _ := p.Lookup("e") // c is the least recently used now
	if e != c {
		t.Fatalf("e got %s; want c's %s", e, c)
	}
	if p.Len() != 3 {
		t.Fatalf("Len = %d; want 3", p.Len())
	}
	// The last address of a /29 is the broadcast address: never handed out.
	small, _ := NewPool(PoolConfig{Prefix4: netip.MustParsePrefix("10.99.0.0/29"), Size: 100})
	if small.Size() != 5 {
		t.Fatalf("/29 pool size = %d; want 5", small.Size())
	}
	for i := range 20 {
		v4, _ := small.Lookup(fmt.Sprint(i))
		if v4 == netip.MustParseAddr("10.99.0.7") || v4 == netip.MustParseAddr("10.99.0.1") {
			t.Fatalf("reserved address %s handed out", v4)
		}
	}
}

func TestPoolConfig(t *testing.T) {
	for _, cfg := range []PoolConfig{
		{Prefix4: netip.MustParsePrefix("10.0.0.0/31")},
		{Prefix4: netip.MustParsePrefix("fd00::/64")},
		{Prefix6: netip.MustParsePrefix("10.0.0.0/8")},
		{Prefix6: netip.MustParsePrefix("fd00::/127")},
		{Size: -1},
	} {
		if _, err := NewPool(cfg); err == nil {
			t.Errorf("NewPool(%+v) succeeded", cfg)
		}
	}
	p, err := NewPool(PoolConfig{Prefix6: netip.MustParsePrefix("fd00::/120"), Size: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if p.Size() != 254 {
		t.Errorf("/120 size = %d; want 254", p.Size())
	}
	v4, v6 := p.Lookup("x")
	if v4.IsValid() || v6 != netip.MustParseAddr("fd00::2") {
		t.Errorf("IPv6-only Lookup = %s, %s", v4, v6)
	}
}

func TestPoolConcurrent(t *testing.T) {
	p, _ := NewPool(PoolConfig{Size: 1000})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 5000 {
				name := fmt.Sprintf("n%d.example", r.IntN(1500))
				v4, _ := p.Lookup(name)
				p.Name(v4)
			}
		}()
	}
	wg.Wait()
	if p.Len() != 1000 {
		t.Errorf("Len = %d; want 1000", p.Len())
	}
	// The map, the entries and the LRU list agree.
	var order []int32
	for i := p.head; i >= 0 && len(order) <= 1000; i = p.entries[i].next {
		order = append(order, i)
	}
	n := len(order)
	for _, i := range order {
		e := p.entries[i]
		if p.byName[e.name] != i {
			t.Fatalf("entry %d (%q) is not indexed", i, e.name)
		}
		v4, v6 := p.addrs(i)
		n4, _ := p.Name(v4)
		n6, _ := p.Name(v6)
		if n4 != e.name || n6 != e.name {
			t.Fatalf("entry %d: %q, but %s names %q and %s names %q", i, e.name, v4, n4, v6, n6)
		}
	}
	if n != 1000 {
		t.Fatalf("LRU list holds %d entries; want 1000", n)
	}
}

func TestPoolAllocs(t *testing.T) {
	p, _ := NewPool(PoolConfig{})
	ip, _ := p.Lookup("a.example")
	if n := testing.AllocsPerRun(100, func() { p.Lookup("a.example"); p.Name(ip) }); n != 0 {
		t.Errorf("Lookup+Name of a held name: %v allocations; want 0", n)
	}
}
