package quicconn

import (
	"errors"
	"testing"
)

func TestSessions(t *testing.T) {
	tab := NewSessions[uint16, *int]()
	var ids []uint16
	for range 3 {
		v := new(int)
		if err := tab.Add(v, func(id uint16) { *v = int(id); ids = append(ids, id) }); err != nil {
			t.Fatal(err)
		}
	}
	if want := []uint16{1, 2, 3}; len(ids) != 3 || ids[0] != want[0] || ids[2] != want[2] {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	s2, ok := tab.Get(2)
	if !ok || *s2 != 2 {
		t.Fatalf("Get(2) = %v, %v", s2, ok)
	}
	tab.Remove(2, func(s *int) bool { return s != s2 }) // another session's Close: kept
	if _, ok := tab.Get(2); !ok {
		t.Fatal("Remove dropped a session that was not the caller's")
	}
	tab.Remove(2, func(s *int) bool { return s == s2 })
	if _, ok := tab.Get(2); ok {
		t.Fatal("session 2 still open after its Remove")
	}

	// Fill every 16-bit ID: the next Add fails, and IDs wrap past taken ones.
	for len(tab.m) < 1<<16 {
		if err := tab.Add(new(int), func(uint16) {}); err != nil {
			t.Fatalf("Add with %d open: %v", len(tab.m), err)
		}
	}
	if err := tab.Add(new(int), func(uint16) {}); !errors.Is(err, errSessionsFull) {
		t.Fatalf("Add with every ID taken: %v, want errSessionsFull", err)
	}
	if open := tab.Close(); len(open) != 1<<16 {
		t.Fatalf("Close returned %d sessions, want %d", len(open), 1<<16)
	}
	if err := tab.Add(new(int), func(uint16) {}); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("Add after Close: %v, want ErrClientClosed", err)
	}
	if _, ok := tab.Get(1); ok {
		t.Fatal("Get after Close found a session")
	}
}
