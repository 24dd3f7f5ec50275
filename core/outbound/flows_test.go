package outbound

import (
	"errors"
	"net"
	"sync"
	"testing"
)

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

// onceFlow closes through Flows.CloseOnce, as the clients' flows do.
type onceFlow struct {
	f     *Flows
	once  sync.Once
	calls int
}

func (c *onceFlow) Close() error {
	return c.f.CloseOnce(&c.once, c, func() error { c.calls++; return errors.New("transport: boom") })
}

func TestFlowsCloseOnce(t *testing.T) {
	var f Flows
	a, b := &onceFlow{f: &f}, &onceFlow{f: &f}
	f.Add(a)
	f.Add(b)
	if err := a.Close(); err == nil || err.Error() != "transport: boom" {
		t.Fatalf("first Close: %v, want the transport's error", err)
	}
	if err := a.Close(); err != net.ErrClosed {
		t.Fatalf("second Close: %v, want net.ErrClosed", err)
	}
	f.Close() // closes b, and not a again: a forgot itself
	if a.calls != 1 || b.calls != 1 {
		t.Fatalf("closed a %d times, b %d times; want 1, 1", a.calls, b.calls)
	}
}
