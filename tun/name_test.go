package tun

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The payloads of issue 28: the first flushed the host's nftables ruleset
// through the kill switch's `oifname %q`, the second voids macOS's kill
// switch through its pf anchor.
const (
	nftPayload = `x" accept; }; }; flush ruleset; table ip pwn { chain out { type nat hook output priority -100; udp dport 53 redirect to :5353; }; }; table inet skiff_killswitch { chain output { #`
	pfPayload  = "utun9 all\npass out quick all\n#"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		goos, name string
		ok         bool
	}{
		{"linux", "skiff0", true},
		{"linux", "tun0", true},
		{"linux", "wg-home.1_a", true},
		{"linux", "abcdefghijklmno", true}, // 15 bytes
		{"linux", "abcdefghijklmnop", false},
		{"linux", "", false},
		{"linux", ".", false},
		{"linux", "..", false},
		{"linux", "-v", false},
		{"linux", "a b", false},
		{"linux", `a"b`, false},
		{"linux", "a/b", false},
		{"linux", "a:b", false},
		{"linux", "tun%d", false},
		{"linux", "eth*", false},
		{"linux", "a\nb", false},
		{"linux", "a\x00", false},
		{"linux", "tün0", false},
		{"linux", nftPayload, false},
		{"linux", pfPayload, false},
		{"freebsd", "tun0", true},
		{"freebsd", nftPayload, false},

		{"darwin", "utun0", true},
		{"darwin", "utun12", true},
		{"darwin", DefaultName, true},
		{"darwin", "utun", false},
		{"darwin", "utun01", false},
		{"darwin", "utun99999", false},
		{"darwin", "utun-1", false},
		{"darwin", "utun+1", false},
		{"darwin", "tun0", false},
		{"darwin", "en0", false},
		{"darwin", pfPayload, false},
		{"darwin", "utun9 all", false},

		{"windows", "skiff0", true},
		{"windows", "Skiff Tunnel (2)", true},
		{"windows", "Туннель #1", true},
		{"windows", strings.Repeat("a", 127), true},
		{"windows", strings.Repeat("a", 128), false},
		{"windows", strings.Repeat("я", 127), true}, // one UTF-16 unit each
		{"windows", strings.Repeat("😀", 64), false}, // two each
		{"windows", "", false},
		{"windows", " skiff", false},
		{"windows", "skiff.", false},
		{"windows", `a"b`, false},
		{"windows", `a\b`, false},
		{"windows", "a/b", false},
		{"windows", "a%PATH%", false},
		{"windows", "a'b", false},
		{"windows", "a\tb", false},
		{"windows", "a\u202eb", false}, // right-to-left override
		{"windows", "a\u0085b", false}, // C1 next line
		{"windows", "a&b", false},
		{"windows", nftPayload, false},
	} {
		err := checkName(tc.goos, tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("checkName(%s, %q) = %v, want ok %v", tc.goos, tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("checkName(%s, %q) = %v, not ErrInvalidConfig", tc.goos, tc.name, err)
		}
	}
}

func TestCheckMTU(t *testing.T) {
	for mtu, ok := range map[int]bool{0: true, 1280: true, 9000: true, 65535: true, 1279: false, 65536: false, -1: false, 68: false} {
		if err := CheckMTU(mtu); (err == nil) != ok {
			t.Errorf("CheckMTU(%d) = %v", mtu, err)
		}
	}
}

// TestBuildersRefuseInjection: the script builders themselves refuse a
// name that is not a token, whatever their callers checked.
func TestBuildersRefuseInjection(t *testing.T) {
	for _, name := range []string{nftPayload, pfPayload, `a"b`, "a\nb", "a b", "utun9 all"} {
		k := KillSwitch{Device: name, Mark: DefaultMark}
		if s, err := nftKillSwitch(&k); !errors.Is(err, ErrInvalidConfig) || s != "" {
			t.Errorf("nftKillSwitch(%q) = %q, %v", name, s, err)
		}
		if s, err := pfKillSwitchRules(&k); !errors.Is(err, ErrInvalidConfig) || s != "" {
			t.Errorf("pfKillSwitchRules(%q) = %q, %v", name, s, err)
		}
		cfg := DefaultConfig()
		if s, err := pfStrictRules(&cfg, name, 0); !errors.Is(err, ErrInvalidConfig) || s != "" {
			t.Errorf("pfStrictRules(%q) = %q, %v", name, s, err)
		}
	}
	k := KillSwitch{Device: "utun3", Servers: []netip.Prefix{{}}}
	if _, err := pfKillSwitchRules(&k); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("pfKillSwitchRules with an invalid server prefix: %v", err)
	}
}

// TestFillRefuses: Config.fill and KillSwitch.fill, which every caller of
// Open and EnableKillSwitch passes, refuse what cannot reach the system,
// and EnableKillSwitch then changes nothing: no record, no nft.
func TestFillRefuses(t *testing.T) {
	for name, c := range map[string]Config{
		"name":       {Name: nftPayload},
		"mtu":        {MTU: 70000},
		"addr4":      {Addr4: DefaultAddr6},
		"addr6":      {Addr6: DefaultAddr4},
		"addr6 4in6": {Addr6: netip.MustParsePrefix("::ffff:10.0.0.1/128")},
		"exclude":    {ExcludeServers: []netip.Prefix{{}}},
		"include":    {Include: []netip.Prefix{{}}},
	} {
		c.StateFile = filepath.Join(t.TempDir(), "tun-state.json")
		if err := c.fill(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: fill = %v", name, err)
		}
		if _, err := Open(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Open = %v", name, err)
		}
		if HasLeftovers(c.StateFile) {
			t.Errorf("%s: Open recorded changes", name)
		}
	}
	c := Config{StateFile: filepath.Join(t.TempDir(), "s")}
	if err := c.fill(); err != nil {
		t.Errorf("the defaults: %v", err)
	}

	state := filepath.Join(t.TempDir(), "tun-state.json")
	for _, k := range []KillSwitch{{Device: nftPayload}, {Device: pfPayload}, {Servers: []netip.Prefix{{}}}} {
		k.StateFile = state
		if err := EnableKillSwitch(k); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("EnableKillSwitch(%q) = %v", k.Device, err)
		}
		if _, err := os.Stat(KillSwitchFile(state)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("EnableKillSwitch(%q) left a record: %v", k.Device, err)
		}
	}
}

// FuzzCheckName: a name checkName accepts for Linux is a token of the
// allowed bytes, and the nft script built with it has exactly the quotes
// and lines of one built with a plain name; one accepted for macOS gives
// pf rules of the same lines.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"skiff0", "utun3", nftPayload, pfPayload, "", ".", "a\x00b", "Skiff Tunnel", "a\u202e"} {
		f.Add(s)
	}
	ref := KillSwitch{Device: "skiff0", Mark: DefaultMark}
	refNft, _ := nftKillSwitch(&ref)
	ref.Device = "utun1"
	refPF, _ := pfKillSwitchRules(&ref)
	f.Fuzz(func(t *testing.T, name string) {
		if checkName("linux", name) == nil {
			for i := 0; i < len(name); i++ {
				if !linuxNameByte(name[i]) {
					t.Fatalf("accepted %q with byte %#x", name, name[i])
				}
			}
			k := KillSwitch{Device: name, Mark: DefaultMark}
			s, err := nftKillSwitch(&k)
			if err != nil {
				t.Fatalf("nftKillSwitch(%q): %v", name, err)
			}
			if strings.Count(s, `"`) != strings.Count(refNft, `"`) || strings.Count(s, "\n") != strings.Count(refNft, "\n") ||
				strings.Count(s, ";") != strings.Count(refNft, ";") || strings.Count(s, "{") != strings.Count(refNft, "{") {
				t.Fatalf("the script for %q differs in structure:\n%s", name, s)
			}
		}
		if checkName("darwin", name) == nil {
			k := KillSwitch{Device: name}
			s, err := pfKillSwitchRules(&k)
			if err != nil {
				t.Fatalf("pfKillSwitchRules(%q): %v", name, err)
			}
			if strings.Count(s, "\n") != strings.Count(refPF, "\n") || strings.ContainsAny(name, " \t\r\n#{}\"") {
				t.Fatalf("the rules for %q differ in structure:\n%s", name, s)
			}
		}
		if checkName("windows", name) == nil {
			if strings.ContainsAny(name, "\"'\\/%:*?<>|&^\x00\t\r\n") || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0xfffd }) {
				t.Fatalf("windows accepted %q", name)
			}
		}
	})
}
