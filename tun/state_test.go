package tun

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestStateFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json")
	st := newStateFile(path)
	changes := []Change{
		{Kind: "link", Link: "skiff0"},
		{Kind: "route", Route: &Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "skiff0", Table: 5348}},
		{Kind: "rule", Rule: &Rule{Family: 6, Priority: 5303, Table: 254, Dst: netip.MustParsePrefix("fc00::/7"), SuppressPrefixLen: -1}},
		{Kind: "command", Undo: []string{"route", "-n", "delete", "-net", "0.0.0.0/1", "-interface", "utun4"}},
	}
	for i, c := range changes {
		if err := st.record(c); err != nil {
			t.Fatal(err)
		}
		// Written before each change: the file always lists all so far.
		got, err := loadStateFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.State.Changes) != i+1 {
			t.Fatalf("after %d records the file holds %d", i+1, len(got.State.Changes))
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := loadStateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.State.Changes, changes) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got.State.Changes, changes)
	}
	if got.State.PID != os.Getpid() || got.State.OS != goos {
		t.Errorf("pid %d os %q", got.State.PID, got.State.OS)
	}
}

func TestCleanupNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if HasLeftovers(path) {
		t.Fatal("leftovers without a state file")
	}
	if err := Cleanup(path, nil); err != nil {
		t.Fatalf("cleanup without a state file: %v", err)
	}
}

func TestCleanupRefusesLiveOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	st := newStateFile(path)
	st.State.PID = os.Getppid() // alive, and not this process
	if err := st.record(Change{Kind: "link", Link: "skiff-none0"}); err != nil {
		t.Fatal(err)
	}
	if err := Cleanup(path, nil); err == nil {
		t.Fatal("cleanup undid the changes of a process that is still running")
	}
	if !HasLeftovers(path) {
		t.Fatal("state file removed")
	}
}

func TestCleanupRemovesGoneLink(t *testing.T) {
	if goos != "linux" {
		t.Skip("link changes exist on Linux only")
	}
	path := filepath.Join(t.TempDir(), "state.json")
	st := newStateFile(path)
	st.State.PID = 0 // a crashed run
	if err := st.record(Change{Kind: "link", Link: "skiff-none0"}); err != nil {
		t.Fatal(err)
	}
	if err := Cleanup(path, nil); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if HasLeftovers(path) {
		t.Fatal("state file left after cleanup")
	}
}

func TestCorruptStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	if err := Cleanup(path, nil); err == nil {
		t.Fatal("a corrupt state file was ignored")
	}
}
