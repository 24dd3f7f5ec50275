package outbound

import "testing"

type closer struct {
	f      *Flows
	closed int
}

func (c *closer) Close() error {
	c.closed++
	c.f.Remove(c) // as a flow's Close does
	return nil
}

func TestFlows(t *testing.T) {
	var f Flows
	a, b := &closer{f: &f}, &closer{f: &f}
	if !f.Add(a) || !f.Add(b) {
		t.Fatal("Add on an open set refused")
	}
	f.Remove(b)
	f.Close()
	if a.closed != 1 || b.closed != 0 {
		t.Fatalf("closed a %d times, b %d times; want 1, 0", a.closed, b.closed)
	}
	if f.Add(&closer{f: &f}) {
		t.Fatal("Add after Close accepted")
	}
	f.Close() // again: nothing left to close
	if a.closed != 1 {
		t.Fatal("a closed twice")
	}
}

func TestFlowsKeep(t *testing.T) {
	var f Flows
	a := &closer{f: &f}
	if err := f.Keep(a, "vless", "a.example:443"); err != nil {
		t.Fatalf("Keep on an open set: %v", err)
	}
	f.Close()
	if a.closed != 1 {
		t.Fatalf("kept flow closed %d times by Close, want 1", a.closed)
	}
	b := &closer{f: &f}
	err := f.Keep(b, "vless", "a.example:443")
	if err == nil || err.Error() != "vless: a.example:443: client closed" {
		t.Fatalf("Keep after Close: err = %v", err)
	}
	if b.closed != 1 {
		t.Fatalf("flow refused by Keep closed %d times, want 1", b.closed)
	}
}
