package sysproxy

import (
	"context"
	"reflect"
	"testing"
)

// TestKDEPlan checks the commands KDE would get (this machine has no
// KDE): kwriteconfig6 when present, the earlier absent key deleted again,
// and KIO told.
func TestKDEPlan(t *testing.T) {
	f := &fakeRun{answers: map[string]string{
		"kreadconfig6 --file kioslaverc --group Proxy Settings --key ProxyType": "0\n",
	}}
	told := 0
	k := kde{tools: tools{run: f.run, look: func(string) error { return nil }}, bus: func() error { told++; return nil }}
	plan, err := k.plan(context.Background(), Config{Addr: testAddr})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range plan {
		if err := k.set(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	k.changed(context.Background())
	want := []string{
		"kwriteconfig6 --file kioslaverc --group Proxy Settings --key httpProxy http://127.0.0.1 7890",
		"kwriteconfig6 --file kioslaverc --group Proxy Settings --key httpsProxy http://127.0.0.1 7890",
		"kwriteconfig6 --file kioslaverc --group Proxy Settings --key socksProxy socks://127.0.0.1 7890",
		"kwriteconfig6 --file kioslaverc --group Proxy Settings --key NoProxyFor localhost,*.local,127.0.0.0/8,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,169.254.0.0/16,fc00::/7,fe80::/10",
		"kwriteconfig6 --file kioslaverc --group Proxy Settings --key ReversedException false",
		"kwriteconfig6 --file kioslaverc --group Proxy Settings --key ProxyType 1",
	}
	if !reflect.DeepEqual(f.cmds, want) || told != 1 {
		t.Errorf("commands\n%q\nwant\n%q (KIO told %d times)", f.cmds, want, told)
	}
	pt, _ := k.get(context.Background(), "ProxyType")
	http, _ := k.get(context.Background(), "httpProxy")
	if pt.Value != "0" || pt.Unset || !http.Unset {
		t.Errorf("read %+v %+v", pt, http)
	}
	f.cmds = nil
	k.set(context.Background(), http)
	if want := []string{"kwriteconfig6 --file kioslaverc --group Proxy Settings --key httpProxy --delete"}; !reflect.DeepEqual(f.cmds, want) {
		t.Errorf("restore of an absent key: %q", f.cmds)
	}
	// Only kwriteconfig5 installed: it is used.
	k.look = func(n string) error {
		if n == "kwriteconfig5" || n == "kreadconfig5" {
			return nil
		}
		return errNotFound
	}
	f.cmds = nil
	k.set(context.Background(), plan[5])
	if f.cmds[0] != "kwriteconfig5 --file kioslaverc --group Proxy Settings --key ProxyType 1" {
		t.Errorf("with Frameworks 5: %q", f.cmds)
	}
}
