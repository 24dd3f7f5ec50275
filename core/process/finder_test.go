package process

import (
	"net/netip"
	"testing"
)

type countingFinder struct{ n int }

func (c *countingFinder) find(string, netip.AddrPort) (Info, error) {
	c.n++
	return Info{PID: 7, Path: "/usr/bin/curl"}, nil
}

func TestFinderCaches(t *testing.T) {
	os := &countingFinder{}
	f := newFinder(os, DefaultTTL)
	src := netip.MustParseAddrPort("10.0.0.2:40000")
	for range 5 {
		if info, err := f.Find("tcp", src); err != nil || info.Name() != "curl" {
			t.Fatalf("Find = %+v, %v", info, err)
		}
	}
	f.Find("udp", src)
	if os.n != 2 {
		t.Errorf("%d look-ups for 6 finds of 2 keys", os.n)
	}
	f = newFinder(os, 0)
	f.Find("tcp", src)
	f.Find("tcp", src)
	if os.n != 4 {
		t.Errorf("with no TTL the answers were kept (%d look-ups)", os.n)
	}
}
