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

// recordedChanges are changes as Skiff records them, by OS.
var recordedChanges = map[string][]Change{
	"linux": {
		{Kind: "link", Link: "skiff0"},
		{Kind: "route", Route: &Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "skiff0", Table: 5348}},
		{Kind: "rule", Rule: &Rule{Family: 6, Priority: 5303, Table: 254, Dst: netip.MustParsePrefix("fc00::/7"), SuppressPrefixLen: -1}},
		{Kind: "nft", Undo: []string{"nft", "delete", "table", "inet", "skiff_killswitch"}},
	},
	"darwin": {
		{Kind: "command", Undo: []string{"pfctl", "-a", "com.apple/250.SkiffStrict", "-F", "all"}},
		{Kind: "command", Undo: []string{"pfctl", "-X", "18446744073709551615"}},
		{Kind: "command", Undo: []string{"route", "-n", "delete", "-inet", "-net", "203.0.113.0/24", "192.168.1.1"}},
		{Kind: "command", Undo: []string{"route", "-n", "delete", "-inet6", "-net", "2001:db8::/32", "fe80::1%en0"}},
		{Kind: "command", Undo: []string{"route", "-n", "delete", "-inet", "-net", "0.0.0.0/1", "-interface", "utun4"}},
		{Kind: "command", Undo: []string{"route", "-n", "delete", "-inet6", "-net", "8000::/1", "-interface", "utun4"}},
	},
	"windows": {
		{Kind: "wfp", Undo: []string{"wfp", "{6b2f3a1c-2d4e-4f60-8a9b-0c1d2e3f4a5b}"}},
		{Kind: "command", Undo: []string{"netsh", "interface", "ipv4", "delete", "route", "prefix=203.0.113.7/32", "interface=7", "nexthop=192.168.1.1", "store=active"}},
		{Kind: "command", Undo: []string{"netsh", "interface", "ipv6", "delete", "route", "prefix=2001:db8::/32", "interface=7", "nexthop=2001:db8::1", "store=active"}},
		{Kind: "command", Undo: []string{"netsh", "interface", "ipv4", "delete", "route", "prefix=0.0.0.0/1", "interface=42", "store=active"}},
		{Kind: "command", Undo: []string{"netsh", "interface", "ipv6", "delete", "route", "prefix=::/1", "interface=42", "store=active"}},
	},
}

func TestStateFileRoundTrip(t *testing.T) {
	for osName, changes := range recordedChanges {
		path := filepath.Join(t.TempDir(), "sub", "state.json")
		st := newStateFile(path)
		st.State.OS = osName
		for i, c := range changes {
			if err := st.record(c); err != nil {
				t.Fatal(err)
			}
			// Written before each change: the file always lists all so far.
			got, err := loadStateFile(path)
			if err != nil {
				t.Fatalf("%s: %v", osName, err)
			}
			if len(got.State.Changes) != i+1 {
				t.Fatalf("after %d records the file holds %d", i+1, len(got.State.Changes))
			}
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if goos != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
		}
		got, err := loadStateFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.State.Changes, changes) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", osName, got.State.Changes, changes)
		}
		if got.State.PID != os.Getpid() || got.State.OS != osName {
			t.Errorf("pid %d os %q", got.State.PID, got.State.OS)
		}
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
// never records, or records on another OS: cleanup must not act on any of
// them. The Windows rows are the attack of issue 28: before, any netsh
// command was accepted and run as SYSTEM.
func TestStateFileRefusesStrangeChanges(t *testing.T) {
	netsh := func(args ...string) string {
		b, _ := json.Marshal(Change{Kind: "command", Undo: append([]string{"netsh"}, args...)})
		return string(b)
	}
	route := func(args ...string) string {
		b, _ := json.Marshal(Change{Kind: "command", Undo: append([]string{"route"}, args...)})
		return string(b)
	}
	for _, tc := range []struct {
		os, change string
		ok         bool
	}{
		{"linux", `{"kind":"link","link":"skiff0"}`, true},
		{"linux", `{"kind":"link","link":"` + strings.Repeat("l", maxLinkName) + `"}`, true},
		{"linux", `{"kind":"link","link":"` + strings.Repeat("l", maxLinkName+1) + `"}`, false},
		{"linux", `{"kind":"link","link":""}`, false},
		{"windows", `{"kind":"link","link":"skiff0"}`, false},
		{"linux", `{"kind":"route","route":{"dst":"0.0.0.0/1","dev":"skiff0"}}`, true},
		{"linux", `{"kind":"route","route":{"dst":"","dev":"skiff0"}}`, false}, // would delete the default route
		{"linux", `{"kind":"route","route":{"dst":"::/1","gateway":"192.0.2.1"}}`, false},
		{"linux", `{"kind":"route"}`, false},
		{"linux", `{"kind":"rule","rule":{"family":4,"priority":5305,"table":5348,"suppress_prefixlength":-1}}`, true},
		{"linux", `{"kind":"rule","rule":{"family":5,"priority":5305}}`, false},
		{"linux", `{"kind":"rule","rule":{"family":4,"priority":1,"dst":"fc00::/7"}}`, false},
		{"linux", `{"kind":"command","undo":["/bin/sh","-c","anything"]}`, false},
		{"linux", `{"kind":"command","undo":[]}`, false},
		{"linux", `{"kind":"link","link":"skiff0","undo":["route"]}`, false},
		{"linux", `{"kind":"nft","undo":["nft","delete","table","inet","skiff_killswitch"]}`, true},
		{"linux", `{"kind":"nft","undo":["nft","flush","ruleset"]}`, false},
		{"linux", `{"kind":"nft","undo":["sh","-c","x"]}`, false},
		{"darwin", `{"kind":"nft","undo":["nft","delete","table","inet","skiff_killswitch"]}`, false},

		// macOS: pfctl releases of Skiff's anchors and reference, route deletions.
		{"darwin", `{"kind":"command","undo":["pfctl","-X","123"]}`, true},
		{"darwin", `{"kind":"command","undo":["pfctl","-a","com.apple/251.SkiffKillSwitch","-F","all"]}`, true},
		{"darwin", `{"kind":"command","undo":["pfctl","-a","com.apple/250.SkiffStrict","-F","all"]}`, true},
		{"darwin", `{"kind":"command","undo":["pfctl","-a","com.apple","-F","all"]}`, false},
		{"darwin", `{"kind":"command","undo":["pfctl","-d"]}`, false},
		{"darwin", `{"kind":"command","undo":["pfctl","-f","/tmp/x.conf"]}`, false},
		{"darwin", `{"kind":"command","undo":["pfctl","-X","12; rm"]}`, false},
		{"darwin", `{"kind":"command","undo":["pfctl","-X","-1"]}`, false},
		{"windows", `{"kind":"command","undo":["pfctl","-X","123"]}`, false},
		{"darwin", route("-n", "delete", "-inet", "-net", "0.0.0.0/1", "-interface", "utun4"), true},
		{"darwin", route("-n", "delete", "-inet", "-net", "10.0.0.0/8", "192.168.1.1"), true},
		{"darwin", route("-n", "delete", "-inet6", "-net", "2001:db8::/32", "fe80::1%en0"), true},
		{"darwin", route("-n", "delete", "-inet6", "-net", "2001:db8::/32", "2001:db8::1%en0"), false},
		{"darwin", route("-n", "delete", "-inet6", "-net", "2001:db8::/32", "fe80::1%en0;x"), false},
		{"darwin", route("-n", "delete", "-net", "0.0.0.0/1", "-interface", "utun4"), false},
		{"darwin", route("-n", "delete", "-inet", "-net", "0.0.0.0/0", "-interface", "utun4"), false}, // the default route
		{"darwin", route("-n", "delete", "-inet", "-net", "0.0.0.0/1", "-interface", "en0"), false},
		{"darwin", route("-n", "delete", "-inet", "-net", "10.0.0.1/8", "192.168.1.1"), false},
		{"darwin", route("-n", "delete", "-inet", "-net", "10.0.0.0/8", "2001:db8::1"), false},
		{"darwin", route("-n", "add", "-inet", "-net", "10.0.0.0/8", "192.168.1.1"), false},
		{"darwin", route("-n", "flush"), false},
		{"darwin", route("-n", "delete", "-inet", "-net", "10.0.0.0/8", "192.168.1.1", "-ifscope", "en0"), false},
		{"linux", route("-n", "delete", "-inet", "-net", "10.0.0.0/8", "192.168.1.1"), false},

		// Windows: only netsh's deletions of Skiff's active routes.
		{"windows", netsh("add", "helper", `C:\Users\Public\x.dll`), false},
		{"windows", netsh("interface", "ipv4", "delete", "route"), false}, // accepted before
		{"windows", netsh("exec", `C:\Users\Public\x.txt`), false},
		{"windows", netsh("advfirewall", "reset"), false},
		{"windows", netsh("advfirewall", "set", "allprofiles", "state", "off"), false},
		{"windows", netsh("interface", "ipv4", "set", "address", "name=7", "static", "10.0.0.1", "255.0.0.0"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=0.0.0.0/1", "interface=42", "store=active"), true},
		{"windows", netsh("interface", "ipv6", "delete", "route", "prefix=8000::/1", "interface=42", "store=active"), true},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=0.0.0.0/0", "interface=42", "store=active"), false}, // the default route
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=0.0.0.0/1", "interface=42", "store=persistent"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=0.0.0.0/1", "interface=Ethernet", "store=active"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=::/1", "interface=42", "store=active"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=203.0.113.0/24", "interface=7", "nexthop=192.168.1.1", "store=active"), true},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=203.0.113.0/24", "interface=7", "nexthop=2001:db8::1", "store=active"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=203.0.113.0/24", "interface=7", "nexthop=x", "store=active"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=203.0.113.0/24", "interface=7", "helper=x.dll", "store=active"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=203.0.113.0/24", "interface=7", "nexthop=192.168.1.1", "store=active", "x"), false},
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=0.0.0.0/1", "interface=42", "store=active") + "," +
			netsh("interface", "ipv4", "delete", "route", "prefix=128.0.0.0/1", "interface=43", "store=active"), false}, // two adapters
		{"windows", netsh("interface", "ipv4", "delete", "route", "prefix=0.0.0.0/1", "interface=42", "store=active") + "," +
			netsh("interface", "ipv4", "delete", "route", "prefix=203.0.113.0/24", "interface=42", "nexthop=192.168.1.1", "store=active"), false}, // exclusion via the adapter
		{"darwin", netsh("interface", "ipv4", "delete", "route", "prefix=0.0.0.0/1", "interface=42", "store=active"), false},
		{"windows", `{"kind":"wfp"}`, false},
		{"windows", `{"kind":"wfp","undo":["wfp","{6b2f3a1c-2d4e-4f60-8a9b-0c1d2e3f4a5b}","0c1d2e3f-4a5b-4f60-8a9b-6b2f3a1c2d4e"]}`, true},
		{"windows", `{"kind":"wfp","undo":["wfp","not-a-guid"]}`, false},
		{"linux", `{"kind":"wfp","undo":["wfp","{6b2f3a1c-2d4e-4f60-8a9b-0c1d2e3f4a5b}"]}`, false},
		{"", `{"kind":"link","link":"skiff0"}`, false},
	} {
		b := []byte(`{"version":1,"pid":1,"os":"` + tc.os + `","changes":[` + tc.change + `]}`)
		_, err := decodeState(b)
		if tc.ok != (err == nil) {
			t.Errorf("%s %s: err = %v; want accepted %v", tc.os, tc.change, err, tc.ok)
		}
	}
	// And a planted file is not acted on: Cleanup fails, the file stays.
	for _, argv := range [][]string{{"touch", "RAN"}, {"netsh", "add", "helper", "RAN"}, {"route", "RAN"}} {
		path := filepath.Join(t.TempDir(), "state.json")
		ran := path + ".ran"
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], "RAN", ran)
		}
		b, _ := json.Marshal(State{Version: 1, PID: 1, OS: goos, Changes: []Change{{Kind: "command", Undo: argv}}})
		os.WriteFile(path, b, 0o600)
		if err := Cleanup(path, nil); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Cleanup of a state file with %q: %v, want refused", argv, err)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("Cleanup ran %q", argv)
		}
		if !HasLeftovers(path) {
			t.Error("the refused file was removed: it is the evidence")
		}
	}
}

// FuzzDecodeState decodes arbitrary state files: never a panic, and a
// state it accepts describes its changes and encodes to a file that
// decodes to the same state.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"version":1,"pid":42,"started":"2026-12-01T10:00:00Z","os":"linux","changes":[{"kind":"link","link":"skiff0"},{"kind":"route","route":{"dst":"0.0.0.0/1","dev":"skiff0","table":5348}},{"kind":"rule","rule":{"family":6,"priority":5303,"table":254,"dst":"fc00::/7","suppress_prefixlength":-1}}]}`))
	f.Add([]byte(`{"version":1,"os":"darwin","changes":[{"kind":"command","undo":["route","-n","delete","-inet","-net","0.0.0.0/1","-interface","utun4"]},{"kind":"command","undo":["pfctl","-X","42"]}]}`))
	f.Add([]byte(`{"version":1,"os":"windows","changes":[{"kind":"command","undo":["netsh","interface","ipv4","delete","route","prefix=0.0.0.0/1","interface=42","store=active"]},{"kind":"command","undo":["netsh","interface","ipv4","delete","route","prefix=203.0.113.0/24","interface=7","nexthop=192.168.1.1","store=active"]}]}`))
	f.Add([]byte(`{"version":1,"os":"windows","changes":[{"kind":"command","undo":["netsh","add","helper","C:\\x.dll"]}]}`))
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
			// An accepted command is one of the recorded forms.
			if c.Kind == "command" {
				switch c.Undo[0] {
				case "netsh":
					if len(c.Undo) < 6 || c.Undo[1] != "interface" || c.Undo[3] != "delete" || c.Undo[4] != "route" {
						t.Fatalf("accepted netsh %q", c.Undo)
					}
				case "route":
					if c.Undo[2] != "delete" {
						t.Fatalf("accepted route %q", c.Undo)
					}
				case "pfctl":
				default:
					t.Fatalf("accepted %q", c.Undo)
				}
			}
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
