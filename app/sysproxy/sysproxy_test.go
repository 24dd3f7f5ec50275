package sysproxy

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// memStore is a store in memory, to test Proxy's bookkeeping.
type memStore struct {
	id      string
	vals    map[string]string // absent: unset
	failSet string            // a key whose writing fails
	log     *[]string
}

func (m *memStore) name() string                    { return m.id }
func (m *memStore) available(context.Context) error { return nil }
func (m *memStore) plan(_ context.Context, c Config) ([]Setting, error) {
	return []Setting{{Key: "server", Value: c.Addr.String()}, {Key: "on", Value: "1"}}, nil
}
func (m *memStore) get(_ context.Context, k string) (Setting, error) {
	v, ok := m.vals[k]
	return Setting{Key: k, Value: v, Unset: !ok}, nil
}
func (m *memStore) set(_ context.Context, s Setting) error {
	if s.Key == m.failSet && !s.Unset && s.Value != "" && s.Value != "old" {
		return errors.New("refused")
	}
	*m.log = append(*m.log, m.id+" "+s.Key)
	if s.Unset {
		delete(m.vals, s.Key)
	} else {
		m.vals[s.Key] = s.Value
	}
	return nil
}
func (m *memStore) changed(context.Context) error { return nil }

var testAddr = netip.MustParseAddrPort("127.0.0.1:7890")

func TestEnableRecordsAndDisableRestores(t *testing.T) {
	dir := t.TempDir()
	var log []string
	a := &memStore{id: "a", vals: map[string]string{"server": "corp:3128"}, log: &log}
	b := &memStore{id: "b", vals: map[string]string{}, log: &log}
	p := &Proxy{path: filepath.Join(dir, StateName), stores: []store{a, b}}
	names, err := p.Enable(context.Background(), Config{Addr: testAddr})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Errorf("stores %v", names)
	}
	if a.vals["server"] != "127.0.0.1:7890" || b.vals["on"] != "1" {
		t.Fatalf("not applied: %v %v", a.vals, b.vals)
	}
	fi, err := os.Stat(p.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	// The user changes one setting while the proxy is on: theirs stays.
	b.vals["on"] = "user"
	if err := p.Disable(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.vals, map[string]string{"server": "corp:3128"}) {
		t.Errorf("a after restore %v", a.vals)
	}
	if !reflect.DeepEqual(b.vals, map[string]string{"on": "user"}) {
		t.Errorf("b after restore %v (the user's change must stay, the unset server must be unset)", b.vals)
	}
	if p.Active() {
		t.Error("state file left after a full restore")
	}
	// Disable again: nothing recorded, nothing done.
	log = nil
	if err := p.Disable(context.Background()); err != nil || len(log) != 0 {
		t.Errorf("second Disable: %v, wrote %v", err, log)
	}
}

func TestEnableRollsBackOnFailure(t *testing.T) {
	dir := t.TempDir()
	var log []string
	a := &memStore{id: "a", vals: map[string]string{"server": "old"}, log: &log}
	b := &memStore{id: "b", vals: map[string]string{"server": "old"}, failSet: "on", log: &log}
	p := &Proxy{path: filepath.Join(dir, StateName), stores: []store{a, b}}
	if _, err := p.Enable(context.Background(), Config{Addr: testAddr}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Enable: %v, want the store's refusal", err)
	}
	if !reflect.DeepEqual(a.vals, map[string]string{"server": "old"}) || !reflect.DeepEqual(b.vals, map[string]string{"server": "old"}) {
		t.Errorf("not rolled back: %v %v", a.vals, b.vals)
	}
	if p.Active() {
		t.Error("state file left after the rollback")
	}
}

func TestEnableAfterCrashRestoresFirst(t *testing.T) {
	dir := t.TempDir()
	var log []string
	a := &memStore{id: "a", vals: map[string]string{"server": "corp:3128"}, log: &log}
	p := &Proxy{path: filepath.Join(dir, StateName), stores: []store{a}}
	if _, err := p.Enable(context.Background(), Config{Addr: testAddr}); err != nil {
		t.Fatal(err)
	}
	// A new process (the old one died) enables again on another port: the
	// recorded earlier values are the user's, not the dead run's.
	p2 := &Proxy{path: p.path, stores: []store{a}}
	if _, err := p2.Enable(context.Background(), Config{Addr: netip.MustParseAddrPort("127.0.0.1:1080")}); err != nil {
		t.Fatal(err)
	}
	restored, err := p2.Recover(context.Background())
	if err != nil || !restored {
		t.Fatalf("Recover: %v %v", restored, err)
	}
	if !reflect.DeepEqual(a.vals, map[string]string{"server": "corp:3128"}) {
		t.Errorf("after two runs %v", a.vals)
	}
}

func TestNoDesktop(t *testing.T) {
	p := &Proxy{path: filepath.Join(t.TempDir(), StateName)}
	if _, err := p.Enable(context.Background(), Config{Addr: testAddr}); !errors.Is(err, ErrNoDesktop) {
		t.Fatalf("Enable with no store: %v", err)
	}
	if p.Active() {
		t.Error("state recorded with nothing changed")
	}
}

func TestDecodeStateRefuses(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"version":2}`, `{"version":1,"changes":[{"store":"","key":"x"}]}`} {
		if _, err := decodeState([]byte(in)); err == nil {
			t.Errorf("decodeState(%q) accepted", in)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"version":1,"pid":1,"addr":"127.0.0.1:1","changes":[{"store":"gnome","key":"org.gnome.system.proxy mode","old":"'none'","new":"'manual'"}]}`))
	f.Add([]byte(`{"version":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err == nil {
			for _, ch := range st.Changes {
				if ch.Store == "" || ch.Key == "" {
					t.Fatal("accepted a change without store or key")
				}
			}
		}
	})
}

func TestWinINetBypass(t *testing.T) {
	got := strings.Join(wininetBypass(DefaultBypass), ";")
	for _, want := range []string{"localhost", "*.local", "127.*", "10.*", "172.16.*", "172.31.*", "192.168.*", "169.254.*", "[::1]", "<local>"} {
		if !strings.Contains(";"+got+";", ";"+want+";") {
			t.Errorf("ProxyOverride %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "172.32.") || strings.Contains(got, "fc00") {
		t.Errorf("ProxyOverride %q has entries outside the list", got)
	}
}

// fakeRun answers a store's commands from a table and records them.
type fakeRun struct {
	answers map[string]string // "prog arg…" → stdout
	cmds    []string
}

func (f *fakeRun) run(_ context.Context, name string, args ...string) (string, error) {
	c := strings.Join(append([]string{name}, args...), " ")
	f.cmds = append(f.cmds, c)
	if out, ok := f.answers[c]; ok {
		return out, nil
	}
	return "", nil
}

// TestNetworksetupPlan checks the commands macOS would run, for every
// enabled service (the disabled one is left alone), and the restore of an
// earlier proxy and of no bypass list.
func TestNetworksetupPlan(t *testing.T) {
	f := &fakeRun{answers: map[string]string{
		nsTool + " -listallnetworkservices":               "An asterisk (*) denotes that a network service is disabled.\nWi-Fi\n*Bluetooth PAN\nUSB 10/100 LAN\n",
		nsTool + " -getwebproxy Wi-Fi":                    "Enabled: Yes\nServer: corp.example\nPort: 3128\nAuthenticated Proxy Enabled: 0\n",
		nsTool + " -getproxybypassdomains Wi-Fi":          "There aren't any bypass domains set on Wi-Fi.\n",
		nsTool + " -getsecurewebproxy Wi-Fi":              "Enabled: No\nServer: \nPort: 0\nAuthenticated Proxy Enabled: 0\n",
		nsTool + " -getsocksfirewallproxy Wi-Fi":          "Enabled: No\nServer: \nPort: 0\nAuthenticated Proxy Enabled: 0\n",
		nsTool + " -getwebproxy USB 10/100 LAN":           "Enabled: No\nServer: \nPort: 0\n",
		nsTool + " -getsecurewebproxy USB 10/100 LAN":     "Enabled: No\nServer: \nPort: 0\n",
		nsTool + " -getsocksfirewallproxy USB 10/100 LAN": "Enabled: No\nServer: \nPort: 0\n",
		nsTool + " -getproxybypassdomains USB 10/100 LAN": "*.corp\n",
	}}
	ns := networksetup{tools{run: f.run, look: func(string) error { return nil }}}
	plan, err := ns.plan(context.Background(), Config{Addr: testAddr})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range plan {
		keys = append(keys, s.Key)
	}
	if want := []string{"bypass Wi-Fi", "web Wi-Fi", "secureweb Wi-Fi", "socks Wi-Fi", "bypass USB 10/100 LAN", "web USB 10/100 LAN", "secureweb USB 10/100 LAN", "socks USB 10/100 LAN"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	f.cmds = nil
	if err := ns.set(context.Background(), plan[1]); err != nil {
		t.Fatal(err)
	}
	if err := ns.set(context.Background(), plan[0]); err != nil {
		t.Fatal(err)
	}
	want := []string{
		nsTool + " -setwebproxy Wi-Fi 127.0.0.1 7890",
		nsTool + " -setwebproxystate Wi-Fi on",
		nsTool + " -setproxybypassdomains Wi-Fi " + strings.Join(DefaultBypass, " "),
	}
	if !reflect.DeepEqual(f.cmds, want) {
		t.Errorf("set commands\n%q\nwant\n%q", f.cmds, want)
	}
	// Restoring: the earlier proxy, a proxy that was never set, no list.
	web, _ := ns.get(context.Background(), "web Wi-Fi")
	sec, _ := ns.get(context.Background(), "secureweb Wi-Fi")
	byp, _ := ns.get(context.Background(), "bypass Wi-Fi")
	if web.Value != "on corp.example 3128" || sec.Value != "off  0" || !byp.Unset {
		t.Fatalf("read %+v %+v %+v", web, sec, byp)
	}
	f.cmds = nil
	for _, s := range []Setting{web, sec, byp} {
		if err := ns.set(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	want = []string{
		nsTool + " -setwebproxy Wi-Fi corp.example 3128",
		nsTool + " -setwebproxystate Wi-Fi on",
		nsTool + " -setsecurewebproxystate Wi-Fi off",
		nsTool + " -setproxybypassdomains Wi-Fi Empty",
	}
	if !reflect.DeepEqual(f.cmds, want) {
		t.Errorf("restore commands\n%q\nwant\n%q", f.cmds, want)
	}
	if _, err := ns.get(context.Background(), "rm -rf"); err == nil {
		t.Error("a key that is not networksetup's was read")
	}
}

func TestEnvText(t *testing.T) {
	s := envText(Config{Addr: testAddr}, 1234, "/home/u/.config/skiff/proxy.env")
	for _, want := range []string{"if kill -0 1234 ", "export http_proxy='http://127.0.0.1:7890' HTTP_PROXY='http://127.0.0.1:7890'", "all_proxy='socks5h://127.0.0.1:7890'", "no_proxy='localhost,.local,127.0.0.0/8", `[ -r "/home/u/.config/skiff/proxy.env" ] && . "/home/u/.config/skiff/proxy.env"`} {
		if !strings.Contains(s, want) {
			t.Errorf("snippet lacks %q:\n%s", want, s)
		}
	}
}

// TestRecoverLeavesLiveRun: the settings of a run that is still alive are
// its own; Recover at another process's start leaves them.
func TestRecoverLeavesLiveRun(t *testing.T) {
	var log []string
	a := &memStore{id: "a", vals: map[string]string{"server": "corp:3128"}, log: &log}
	p := &Proxy{path: filepath.Join(t.TempDir(), StateName), stores: []store{a}}
	if _, err := p.Enable(context.Background(), Config{Addr: testAddr}); err != nil {
		t.Fatal(err)
	}
	st, err := p.load()
	if err != nil {
		t.Fatal(err)
	}
	st.PID = os.Getppid() // alive: the go command that runs this test
	if err := p.save(st); err != nil {
		t.Fatal(err)
	}
	if restored, err := p.Recover(context.Background()); restored || err != nil || a.vals["server"] != testAddr.String() {
		t.Fatalf("Recover took a live run's settings: %v %v %v", restored, err, a.vals)
	}
	st.PID = 1 << 30 // no such process
	p.save(st)
	if restored, err := p.Recover(context.Background()); !restored || err != nil || a.vals["server"] != "corp:3128" {
		t.Fatalf("Recover of a dead run's settings: %v %v %v", restored, err, a.vals)
	}
}
