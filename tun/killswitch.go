package tun

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// KillSwitch blocks every packet that would leave the machine outside the
// tunnel. Unlike the routes it is not tied to a run: it stays in force
// when Skiff stops, crashes or is killed, while it restarts, and at boot
// until Skiff is back (the service applies it before it connects), and
// only DisableKillSwitch removes it. What passes:
//
//   - everything through the TUN device Device (present or not);
//   - Skiff's own sockets to the servers (Linux: the fwmark Mark, the same
//     mark that keeps them out of the tunnel; Windows: Skiff's executable;
//     macOS: traffic to Servers);
//   - loopback, DHCP (v4 and v6) and IPv6 neighbour discovery;
//   - with AllowLAN, the private and link-local ranges (PrivatePrefixes),
//     except DNS.
//
// Everything else is dropped, DNS to any address included.
//
// On Linux it is an nftables table of its own (inet skiff_killswitch), on
// macOS a pf anchor, on Windows persistent WFP filters. Enabling records
// how to remove it in a file beside the state file (KillSwitchFile), so
// that `skiff cleanup` and the uninstaller can, whatever became of the
// process that enabled it.
type KillSwitch struct {
	Device   string         // DefaultName when ""
	Mark     uint32         // DefaultMark when 0
	AllowLAN bool           // let the LAN through
	Servers  []netip.Prefix // the servers' addresses (macOS)
	// Addrs are the device's addresses (Windows, where what enters the
	// tunnel is matched by its source address); DefaultAddr4 and
	// DefaultAddr6 when nil.
	Addrs []netip.Prefix
	// StateFile is the tunnel's state file (DefaultStateFile() when ""):
	// the kill switch's record is KillSwitchFile(StateFile).
	StateFile string
	Logger    *slog.Logger // nil discards
}

// fill puts in the defaults and checks what reaches the system (check).
func (k *KillSwitch) fill() error {
	if k.Device == "" {
		k.Device = DefaultName
	}
	if k.Mark == 0 {
		k.Mark = DefaultMark
	}
	if k.Addrs == nil {
		k.Addrs = []netip.Prefix{DefaultAddr4, DefaultAddr6}
	}
	if k.StateFile == "" {
		k.StateFile = DefaultStateFile()
	}
	if k.Logger == nil {
		k.Logger = slog.New(slog.DiscardHandler)
	}
	return k.check()
}

// KillSwitchFile returns where the kill switch's record is kept for the
// tunnel state file stateFile ("" for the default).
func KillSwitchFile(stateFile string) string {
	if stateFile == "" {
		stateFile = DefaultStateFile()
	}
	return filepath.Join(filepath.Dir(stateFile), "killswitch.json")
}

// EnableKillSwitch puts k in force, replacing a kill switch in force
// already (with other settings, or another device's name) in one step, so
// that nothing leaks in between.
func EnableKillSwitch(k KillSwitch) error {
	if err := k.fill(); err != nil {
		return fmt.Errorf("tun: kill switch: %w", err)
	}
	path := KillSwitchFile(k.StateFile)
	st := newStateFile(path)
	if old, err := loadStateFile(path); err == nil {
		st.State.Changes = old.State.Changes // still to be undone if this fails halfway
	}
	if err := enableKillSwitch(&k, st); err != nil {
		return fmt.Errorf("tun: kill switch: %w", err)
	}
	k.Logger.Info("tun: kill switch on: traffic outside the tunnel is blocked", "device", k.Device, "allow_lan", k.AllowLAN)
	return nil
}

// DisableKillSwitch removes the kill switch recorded beside stateFile ("" for
// the default). It does nothing when none is recorded.
func DisableKillSwitch(stateFile string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path := KillSwitchFile(stateFile)
	st, err := loadStateFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := restore(st, log); err != nil {
		return fmt.Errorf("tun: kill switch: %w", err)
	}
	log.Info("tun: kill switch off")
	return nil
}

// KillSwitchOn reports whether a kill switch is recorded beside stateFile
// ("" for the default).
func KillSwitchOn(stateFile string) bool {
	_, err := os.Stat(KillSwitchFile(stateFile))
	return err == nil
}

// nftKillSwitchTable is the Linux kill switch's nftables table.
const nftKillSwitchTable = "skiff_killswitch"

// nftKillSwitch returns the nftables script that (re)creates the kill
// switch's table: one transaction (nft -f), so that replacing an older
// table leaves no moment without one. It filters the output hook (the
// machine's own packets) and the forward hook (containers and VMs routed
// through it). It refuses a device name that is not a Linux name
// (checkName): the name goes into an nft string, which has no escapes.
func nftKillSwitch(k *KillSwitch) (string, error) {
	if err := checkName("linux", k.Device); err != nil {
		return "", err
	}
	var b strings.Builder
	t := nftKillSwitchTable
	// "table …; delete table …" removes an older one whether or not it exists.
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\ntable inet %s {\n", t, t, t)
	var lan4, lan6 []string
	for _, p := range PrivatePrefixes {
		if p.Addr().Is4() {
			lan4 = append(lan4, p.String())
		} else {
			lan6 = append(lan6, p.String())
		}
	}
	chain := func(name, hook string, own bool) {
		fmt.Fprintf(&b, "\tchain %s {\n\t\ttype filter hook %s priority filter; policy drop;\n", name, hook)
		if own {
			b.WriteString("\t\toifname \"lo\" accept\n")
		}
		fmt.Fprintf(&b, "\t\toifname \"%s\" accept\n", k.Device) // a checked name: no quote to escape
		if own {
			fmt.Fprintf(&b, "\t\tmeta mark %#x accept\n", k.Mark)
			b.WriteString("\t\tudp sport 68 udp dport 67 accept\n")
			b.WriteString("\t\tudp sport 546 udp dport 547 accept\n")
			b.WriteString("\t\ticmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept\n")
			b.WriteString("\t\tip6 daddr ff02::/16 icmpv6 type { mld-listener-report, mld2-listener-report } accept\n")
		}
		if k.AllowLAN {
			b.WriteString("\t\tmeta l4proto { tcp, udp } th dport 53 drop\n")
			fmt.Fprintf(&b, "\t\tip daddr { %s } accept\n", strings.Join(lan4, ", "))
			fmt.Fprintf(&b, "\t\tip6 daddr { %s } accept\n", strings.Join(lan6, ", "))
		}
		b.WriteString("\t}\n")
	}
	chain("output", "output", true)
	chain("forward", "forward", false)
	b.WriteString("}\n")
	return b.String(), nil
}
