package tun

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNftKillSwitch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		k        KillSwitch
		want     []string // lines of the output chain, in this order
		wantNot  []string
		forwards []string // lines of the forward chain
	}{
		{
			name: "default",
			k:    KillSwitch{Device: "skiff0", Mark: 0x534b},
			want: []string{
				"type filter hook output priority filter; policy drop;",
				`oifname "lo" accept`,
				`oifname "skiff0" accept`,
				"meta mark 0x534b accept",
				"udp sport 68 udp dport 67 accept",
				"udp sport 546 udp dport 547 accept",
				"icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept",
			},
			wantNot:  []string{"192.168.0.0/16", "dport 53"},
			forwards: []string{"type filter hook forward priority filter; policy drop;", `oifname "skiff0" accept`},
		},
		{
			name: "allow LAN",
			k:    KillSwitch{Device: "tun9", Mark: 7, AllowLAN: true},
			want: []string{
				`oifname "tun9" accept`,
				"meta mark 0x7 accept",
				// DNS is dropped before the LAN is let through.
				"meta l4proto { tcp, udp } th dport 53 drop",
				"ip daddr { 10.0.0.0/8, 100.64.0.0/10, 169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16, 224.0.0.0/4, 255.255.255.255/32 } accept",
				"ip6 daddr { fc00::/7, fe80::/10, ff00::/8 } accept",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script, err := nftKillSwitch(&tc.k)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(script, "table inet skiff_killswitch\ndelete table inet skiff_killswitch\ntable inet skiff_killswitch {\n") {
				t.Errorf("the script does not replace the table in one transaction:\n%s", script)
			}
			out, fwd, ok := strings.Cut(script, "chain forward {")
			if !ok {
				t.Fatalf("no forward chain:\n%s", script)
			}
			pos := 0
			for _, w := range tc.want {
				i := strings.Index(out[pos:], "\t\t"+w+"\n")
				if i < 0 {
					t.Errorf("output chain lacks %q (after the lines before it):\n%s", w, out)
					continue
				}
				pos += i
			}
			for _, w := range tc.wantNot {
				if strings.Contains(script, w) {
					t.Errorf("script has %q:\n%s", w, script)
				}
			}
			for _, w := range tc.forwards {
				if !strings.Contains(fwd, w) {
					t.Errorf("forward chain lacks %q:\n%s", w, fwd)
				}
			}
			if strings.Contains(fwd, "meta mark") || strings.Contains(fwd, `"lo"`) {
				t.Errorf("the forward chain lets Skiff's own or loopback packets through, which it never sees:\n%s", fwd)
			}
		})
	}
}

// TestNftKillSwitchLoads has nft check the script (root, nft installed).
func TestNftKillSwitchLoads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for nft --check")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft")
	}
	for _, lan := range []bool{false, true} {
		k := KillSwitch{Device: "skiff0", Mark: DefaultMark, AllowLAN: lan}
		script, err := nftKillSwitch(&k)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("nft", "--check", "-f", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("allow LAN %v: nft --check: %v\n%s", lan, err, out)
		}
	}
}

func TestPFKillSwitchRules(t *testing.T) {
	k := KillSwitch{Device: "utun5", Servers: []netip.Prefix{netip.MustParsePrefix("203.0.113.9/32")}, AllowLAN: true}
	rules, err := pfKillSwitchRules(&k)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(rules), "\n")
	want := []string{
		"# Skiff kill switch: nothing leaves outside the tunnel.",
		"pass out quick on lo0 all",
		"pass out quick on utun5 all",
		"pass out quick to { 203.0.113.9/32 }",
		"pass out quick inet proto udp from any port 68 to any port 67",
		"pass out quick inet6 proto udp from any port 546 to any port 547",
		"pass out quick inet6 proto icmp6 icmp6-type { routersol neighbrsol neighbradv }",
		"block drop out quick proto { udp tcp } to any port 53",
		"pass out quick to { 10.0.0.0/8 100.64.0.0/10 169.254.0.0/16 172.16.0.0/12 192.168.0.0/16 224.0.0.0/4 255.255.255.255/32 fc00::/7 fe80::/10 ff00::/8 }",
		"block drop out all",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Before a device is open (boot, after a crash): every utun passes.
	k = KillSwitch{Device: DefaultName}
	if r, err := pfKillSwitchRules(&k); err != nil || !strings.Contains(r, "pass out quick on utun all\n") || strings.Contains(r, "port 53") {
		t.Errorf("without a device:\n%s", r)
	}
}

func TestKillSwitchFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "tun-state.json")
	if got := KillSwitchFile(state); got != filepath.Join(dir, "killswitch.json") {
		t.Errorf("KillSwitchFile = %s", got)
	}
	if KillSwitchOn(state) {
		t.Error("on before anything was recorded")
	}
	// Nothing recorded: nothing to do.
	if err := DisableKillSwitch(state, nil); err != nil {
		t.Errorf("DisableKillSwitch with nothing recorded: %v", err)
	}
	// A record whose changes are undone (a link long gone) is removed.
	st := newStateFile(KillSwitchFile(state))
	if err := st.record(Change{Kind: "link", Link: "skiff-gone-0"}); err != nil {
		t.Fatal(err)
	}
	if !KillSwitchOn(state) {
		t.Fatal("not on after a record")
	}
	if err := DisableKillSwitch(state, nil); err != nil {
		t.Fatal(err)
	}
	if KillSwitchOn(state) {
		t.Error("record left after DisableKillSwitch")
	}
}

func TestPlanWFPKillSwitch(t *testing.T) {
	names := func(rules []wfpRule) []string {
		s := make([]string, len(rules))
		for i, r := range rules {
			s[i] = r.String()
		}
		return s
	}
	k := KillSwitch{}
	k.fill()
	got := names(planWFPKillSwitch(&k))
	want := []string{
		"v4 w15 permit loopback",
		"v4 w14 permit app",
		"v4 w13 permit from 172.19.0.0/30",
		"v4 w12 permit proto 17 port 67",
		"v4 w9 block",
		"v6 w15 permit loopback",
		"v6 w14 permit app",
		"v6 w13 permit from fdfe:dcba:9876::/126",
		"v6 w12 permit proto 17 port 547",
		"v6 w12 permit proto 58 to fe80::/10,ff02::/16",
		"v6 w9 block",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	k.AllowLAN = true
	got = names(planWFPKillSwitch(&k))
	for _, w := range []string{
		"v4 w11 block proto 6,17 port 53",
		"v4 w10 permit to 10.0.0.0/8,100.64.0.0/10,169.254.0.0/16,172.16.0.0/12,192.168.0.0/16,224.0.0.0/4,255.255.255.255/32",
		"v6 w11 block proto 6,17 port 53",
		"v6 w10 permit to fc00::/7,fe80::/10,ff00::/8",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("allow-LAN plan lacks %q:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
