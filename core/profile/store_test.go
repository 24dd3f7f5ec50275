package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

func sampleProfile(n int) *Profile {
	p := New()
	p.Subscriptions = []*Subscription{{ID: "s1", URL: "https://example.com/sub?token=secret", Title: "Example"}}
	for i := range n {
		cfg := node.Node{
			Name: fmt.Sprintf("节点 %d", i), Protocol: node.Hysteria2, Server: "2001:db8::1", Port: uint16(1000 + i),
			Hysteria2: &node.Hysteria2Options{Auth: "pw"},
		}
		p.Nodes = append(p.Nodes, &Node{ID: NodeID("s1", &cfg), Subscription: "s1", Config: cfg})
	}
	if n > 0 {
		p.Groups = []*Group{{ID: "g1", Name: "auto", Type: GroupFailover, Members: []string{p.Nodes[0].ID}}}
		p.Selected = "g1"
	}
	p.Settings.RefreshInterval = Duration(12 * time.Hour)
	return p
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Load()
	if err != nil || len(p.Nodes) != 0 || p.Version != SchemaVersion {
		t.Fatalf("empty load: %+v, %v", p, err)
	}
	want := sampleProfile(3)
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) != string(gb) {
		t.Fatalf("round trip differs:\n got %s\nwant %s", gb, wb)
	}
	// A second save keeps the first as the backup.
	want.Nodes[0].Rename = "mine"
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	bak, err := readFile(filepath.Join(dir, BackupName))
	if err != nil {
		t.Fatal(err)
	}
	if bak.Nodes[0].Rename != "" {
		t.Errorf("backup has the new content")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestCorruptFileSetAside(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
	}{
		{"truncated", `{"version":1,"nodes":[{"id":"a"`},
		{"garbage", "\x00\x01binary"},
		{"bad reference", `{"version":1,"nodes":[{"id":"a"},{"id":"a"}]}`},
		{"bad duration", `{"version":1,"settings":{"refreshInterval":"soon"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := Open(dir)
			good := sampleProfile(2)
			if err := s.Save(good); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(good); err != nil { // now a backup exists
				t.Fatal(err)
			}
			if err := os.WriteFile(s.Path(), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := s.Load()
			var cerr *CorruptError
			if !errors.As(err, &cerr) || !cerr.Recovered {
				t.Fatalf("want recovered CorruptError, got %v", err)
			}
			if len(p.Nodes) != 2 {
				t.Errorf("recovered %d nodes, want 2", len(p.Nodes))
			}
			kept, rerr := os.ReadFile(cerr.SetAside)
			if rerr != nil || string(kept) != tc.content {
				t.Errorf("damaged file not kept intact at %s: %v", cerr.SetAside, rerr)
			}
			if !strings.Contains(err.Error(), "damaged") {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestCorruptWithoutBackup(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	os.WriteFile(s.Path(), []byte("{"), 0o600)
	p, err := s.Load()
	var cerr *CorruptError
	if !errors.As(err, &cerr) || cerr.Recovered || p == nil || len(p.Nodes) != 0 {
		t.Fatalf("got %v, %v", p, err)
	}
	if _, err := os.Stat(cerr.SetAside); err != nil {
		t.Fatal(err)
	}
}

func TestNewerVersionRefused(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	content := `{"version":99,"future":true}`
	os.WriteFile(s.Path(), []byte(content), 0o600)
	if _, err := s.Load(); !errors.Is(err, ErrNewerVersion) {
		t.Fatalf("got %v", err)
	}
	if err := s.Update(func(*Profile) error { return nil }); !errors.Is(err, ErrNewerVersion) {
		t.Fatalf("update: %v", err)
	}
	if b, _ := os.ReadFile(s.Path()); string(b) != content {
		t.Fatal("newer file was changed")
	}
}

func TestMigrate(t *testing.T) {
	// A made-up schema history: 1 kept the selection inside settings, 2 moved
	// it to the top level.
	list := []migration{{From: 1, Apply: func(doc map[string]any) error {
		st, _ := doc["settings"].(map[string]any)
		if sel, ok := st["selected"]; ok {
			doc["selected"] = sel
			delete(st, "selected")
		}
		return nil
	}}}
	out, err := migrate([]byte(`{"version":1,"settings":{"selected":"n1","probeURL":"http://x/"}}`), 1, list)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(out, &doc)
	if doc["selected"] != "n1" || doc["version"] != float64(2) {
		t.Fatalf("migrated: %s", out)
	}
	// A file without a version reads as schema 1.
	p, err := Decode([]byte(`{"selected":"x","settings":{"refreshInterval":3600}}`))
	if err != nil || p.Version != SchemaVersion || p.Settings.RefreshInterval != Duration(time.Hour) {
		t.Fatalf("unversioned: %+v %v", p, err)
	}
}

func TestUpdateConcurrent(t *testing.T) {
	s, _ := Open(t.TempDir())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(func(p *Profile) error {
				p.Groups = append(p.Groups, &Group{ID: "g" + strconv.Itoa(i), Type: GroupSelector})
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	p, err := s.Load()
	if err != nil || len(p.Groups) != 20 {
		t.Fatalf("groups %d, %v", len(p.Groups), err)
	}
	// An error from fn saves nothing.
	errStop := errors.New("stop")
	if err := s.Update(func(p *Profile) error { p.Groups = nil; return errStop }); err != errStop {
		t.Fatal(err)
	}
	if p, _ := s.Load(); len(p.Groups) != 20 {
		t.Fatal("failed update was saved")
	}
}

func TestDefaultDirEnv(t *testing.T) {
	t.Setenv(EnvConfigDir, "/tmp/skiff-test-dir")
	s, err := Open("")
	if err != nil || s.Dir() != "/tmp/skiff-test-dir" {
		t.Fatalf("%v %v", s, err)
	}
}

func TestPruneAndFind(t *testing.T) {
	p := sampleProfile(3)
	p.Nodes[1].Rename = "home"
	p.Groups[0].Members = append(p.Groups[0].Members, "gone", p.Nodes[2].ID)
	p.Groups[0].Selected = "gone"
	p.Prune()
	if got := p.Groups[0].Members; len(got) != 2 || got[1] != p.Nodes[2].ID || p.Groups[0].Selected != "" {
		t.Fatalf("members %v", got)
	}
	if n, err := p.FindNode("home"); err != nil || n != p.Nodes[1] {
		t.Fatal(n, err)
	}
	if n, err := p.FindNode(p.Nodes[2].ID); err != nil || n != p.Nodes[2] {
		t.Fatal(n, err)
	}
	p.Nodes[2].Rename = "home"
	if _, err := p.FindNode("home"); err == nil || !strings.Contains(err.Error(), "2 nodes") {
		t.Fatal(err)
	}
	if _, err := p.FindNode("nope"); err == nil {
		t.Fatal("found a missing node")
	}
}

func TestNodeIDStable(t *testing.T) {
	a := node.Node{Name: "A", Protocol: node.VLESS, Server: "Example.com", Port: 443, VLESS: &node.VLESSOptions{UUID: "u1"}}
	b := a
	b.Name = "renamed by provider"
	b.Server = "example.com"
	if NodeID("s", &a) != NodeID("s", &b) {
		t.Error("name or host case changed the ID")
	}
	c := a
	c.Port = 8443
	if NodeID("s", &a) == NodeID("s", &c) || NodeID("s", &a) == NodeID("t", &a) {
		t.Error("different servers or sources share an ID")
	}
	if strings.Contains(NodeID("s", &a), "u1") {
		t.Error("ID carries the credential")
	}
}

// TestCrashDuringSave re-runs the test binary as a helper that saves in a
// tight loop, kills it at several moments, and checks each time that the
// profile loads and is one of the documents the helper wrote.
func TestCrashDuringSave(t *testing.T) {
	if os.Getenv("SKIFF_PROFILE_CRASH_HELPER") != "" {
		crashHelper()
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDuringSave$")
		cmd.Env = append(os.Environ(), "SKIFF_PROFILE_CRASH_HELPER=1", EnvConfigDir+"="+dir)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the helper has started saving, then kill it mid-loop.
		buf := make([]byte, 16)
		stdout.Read(buf)
		time.Sleep(time.Duration(5+round*7) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		s, _ := Open(dir)
		p, err := s.Load()
		if err != nil {
			t.Fatalf("round %d: load after kill: %v", round, err)
		}
		if len(p.Nodes) == 0 || len(p.Nodes) != p.Settings.TUN.MTU {
			t.Fatalf("round %d: inconsistent profile: %d nodes, marker %d", round, len(p.Nodes), p.Settings.TUN.MTU)
		}
	}
}

func crashHelper() {
	s, err := Open("")
	if err != nil {
		os.Exit(3)
	}
	for i := 0; ; i++ {
		p := sampleProfile(50 + i%200)
		p.Settings.TUN.MTU = len(p.Nodes) // marker tying the document together
		if err := s.Save(p); err != nil {
			os.Exit(4)
		}
		if i == 0 {
			os.Stdout.WriteString("started\n")
		}
	}
}

func FuzzDecode(f *testing.F) {
	b, _ := json.Marshal(sampleProfile(2))
	f.Add(b)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"settings":{"refreshInterval":1e300}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("re-decoding our own output: %v", err)
		}
	})
}
