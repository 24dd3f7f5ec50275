package tun

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// TestStateFileRefusesStrangeChanges loads state files with changes Skiff
// never records: cleanup must not act on any of them.
func TestStateFileRefusesStrangeChanges(t *testing.T) {
	for _, tc := range []struct {
		change string
		ok     bool
	}{
		{`{"kind":"link","link":"skiff0"}`, true},
		{`{"kind":"link","link":"` + strings.Repeat("l", maxLinkName) + `"}`, true},
		{`{"kind":"link","link":"` + strings.Repeat("l", maxLinkName+1) + `"}`, false},
		{`{"kind":"link","link":""}`, false},
		{`{"kind":"route","route":{"dst":"0.0.0.0/1","dev":"skiff0"}}`, true},
		{`{"kind":"route","route":{"dst":"","dev":"skiff0"}}`, false}, // would delete the default route
		{`{"kind":"route","route":{"dst":"::/1","gateway":"192.0.2.1"}}`, false},
		{`{"kind":"route"}`, false},
		{`{"kind":"rule","rule":{"family":4,"priority":5305,"table":5348,"suppress_prefixlength":-1}}`, true},
		{`{"kind":"rule","rule":{"family":5,"priority":5305}}`, false},
		{`{"kind":"rule","rule":{"family":4,"priority":1,"dst":"fc00::/7"}}`, false},
		{`{"kind":"command","undo":["pfctl","-X","123"]}`, true},
		{`{"kind":"command","undo":["netsh","interface","ipv4","delete","route"]}`, true},
		{`{"kind":"command","undo":["/bin/sh","-c","anything"]}`, false},
		{`{"kind":"command","undo":[]}`, false},
		{`{"kind":"link","link":"skiff0","undo":["route"]}`, false},
		{`{"kind":"wfp"}`, false},
		{`{"kind":"wfp","undo":["wfp","{6b2f3a1c-2d4e-4f60-8a9b-0c1d2e3f4a5b}","0c1d2e3f-4a5b-4f60-8a9b-6b2f3a1c2d4e"]}`, true},
		{`{"kind":"wfp","undo":["wfp","not-a-guid"]}`, false},
		{`{"kind":"nft","undo":["nft","delete","table","inet","skiff_killswitch"]}`, true},
		{`{"kind":"nft","undo":["nft","flush","ruleset"]}`, false},
		{`{"kind":"nft","undo":["sh","-c","x"]}`, false},
	} {
		b := []byte(`{"version":1,"pid":1,"changes":[` + tc.change + `]}`)
		_, err := decodeState(b)
		if tc.ok != (err == nil) {
			t.Errorf("%s: err = %v; want accepted %v", tc.change, err, tc.ok)
		}
	}
	// And a planted file is not acted on: Cleanup fails, the file stays.
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte(`{"version":1,"pid":1,"changes":[{"kind":"command","undo":["touch","`+path+`.ran"]}]}`), 0o600)
	if err := Cleanup(path, nil); err == nil {
		t.Error("Cleanup accepted a state file with a foreign command")
	}
	if _, err := os.Stat(path + ".ran"); err == nil {
		t.Error("Cleanup ran a foreign command")
	}
}

// FuzzDecodeState decodes arbitrary state files: never a panic, and a
// state it accepts describes its changes and encodes to a file that
// decodes to the same state.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"version":1,"pid":42,"started":"2026-12-01T10:00:00Z","os":"linux","changes":[{"kind":"link","link":"skiff0"},{"kind":"route","route":{"dst":"0.0.0.0/1","dev":"skiff0","table":5348}},{"kind":"rule","rule":{"family":6,"priority":5303,"table":254,"dst":"fc00::/7","suppress_prefixlength":-1}}]}`))
	f.Add([]byte(`{"version":1,"changes":[{"kind":"command","undo":["route","-n","delete","-net","0.0.0.0/1","-interface","utun4"]}]}`))
	f.Add([]byte(`{"version":1,"changes":[{"kind":"route","route":{"dst":""}}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			return
		}
		for _, c := range st.Changes {
			_ = c.String()
		}
		enc, err := json.Marshal(&st)
		if err != nil {
			t.Fatalf("accepted state does not encode: %v", err)
		}
		again, err := decodeState(enc)
		if err != nil {
			t.Fatalf("re-encoded state refused: %v\n%s", err, enc)
		}
		enc2, _ := json.Marshal(&again)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip:\n%s\n%s", enc, enc2)
		}
	})
}
