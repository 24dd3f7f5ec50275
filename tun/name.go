package tun

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Every value this package writes into an nft or pf script or onto a
// command line (ip, route, ifconfig, netsh) passes the checks here first:
// Config.fill and KillSwitch.fill run them, so every caller (the service,
// `skiff run`, the window) does, and the script builders run them again.
// A name is a token of a few safe bytes, never quoted text: nft strings
// have no escapes, and pf has no strings at all.

// ErrInvalidConfig is returned (wrapped) for a Config or KillSwitch value
// that cannot be handed to the system: a device name outside the OS's
// rules, an MTU out of range, an address of the wrong family.
var ErrInvalidConfig = errors.New("invalid TUN setting")

// ErrDeviceExists is returned (wrapped) by Open when a network device of
// the configured name exists already: Skiff uses and deletes only devices
// it creates, never another program's (OpenVPN's tun0, tailscale0, a VM's
// tap, a persistent tun made with `ip tuntap add`).
var ErrDeviceExists = errors.New("a network device of that name exists already")

// The device MTU's range: IPv6 needs 1280; 65535 is the most an IP packet
// (and Linux's TUN) carries.
const (
	MinMTU = 1280
	MaxMTU = 65535
)

// Name limits. Linux: IFNAMSIZ is 16 with the NUL. Windows: Wintun takes
// MAX_ADAPTER_NAME (128) UTF-16 units with the NUL.
const (
	maxLinuxName   = 15
	maxWindowsName = 127
)

// CheckName reports whether name may be the TUN device's name on this OS
// (see checkName); "" is the default and passes.
func CheckName(name string) error {
	if name == "" {
		return nil
	}
	return checkName(goos, name)
}

// checkName checks a device name by the rules of goos:
//
//   - linux (and other Unix): 1–15 bytes of [A-Za-z0-9_.-], not "." or
//     "..", not starting with "-" (no option to ip). The kernel takes more
//     (any byte but NUL, "/", ":" and space), but these are what an nft
//     string and a command line hold without quoting.
//   - darwin: utunN (the kernel picks N; the name is only used to tell
//     which device the kill switch lets through), or DefaultName, which
//     stands for "whichever utun Skiff opens".
//   - windows: 1–127 UTF-16 units of letters, digits, space and "_.-()#",
//     not starting or ending with a space or dot: no control or format
//     character (bidi overrides), no quote, slash, backslash, "%" or other
//     character netsh, the registry or a file name treats specially.
func checkName(goos, name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: device name %q: %s", ErrInvalidConfig, name, why)
	}
	switch goos {
	case "darwin":
		if name == DefaultName || isUtun(name) {
			return nil
		}
		return bad("on macOS the device is utunN (the system picks N); leave the name empty")
	case "windows":
		switch {
		case name == "":
			return bad("empty")
		case len(utf16.Encode([]rune(name))) > maxWindowsName:
			return bad(fmt.Sprintf("longer than %d characters", maxWindowsName))
		case strings.IndexFunc(name, func(r rune) bool { return !windowsNameRune(r) }) >= 0:
			return bad("only letters, digits, spaces and _ . - ( ) #")
		case name[0] == ' ' || name[0] == '.' || name[len(name)-1] == ' ' || name[len(name)-1] == '.':
			return bad("it must not start or end with a space or dot")
		}
		return nil
	}
	for i := 0; i < len(name); i++ {
		if !linuxNameByte(name[i]) {
			return bad("only letters, digits and _ . -")
		}
	}
	switch {
	case name == "" || len(name) > maxLinuxName:
		return bad(fmt.Sprintf("1 to %d bytes", maxLinuxName))
	case name == "." || name == "..":
		return bad("not a name")
	case name[0] == '-':
		return bad("it must not start with -")
	}
	return nil
}

func linuxNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

func windowsNameRune(r rune) bool {
	if r < 0x80 {
		return linuxNameByte(byte(r)) || strings.ContainsRune(" ()#", r)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isUtun reports whether name is utunN, N a decimal number without
// leading zeros and below 2^16.
func isUtun(name string) bool {
	n, ok := strings.CutPrefix(name, "utun")
	if !ok || n == "" || len(n) > 5 || (n[0] == '0' && n != "0") {
		return false
	}
	v, err := strconv.Atoi(n)
	return err == nil && v >= 0 && v < 1<<16 && strconv.Itoa(v) == n
}

// CheckMTU reports whether mtu may be the device's MTU (0 is the default).
func CheckMTU(mtu int) error {
	if mtu != 0 && (mtu < MinMTU || mtu > MaxMTU) {
		return fmt.Errorf("%w: MTU %d: want %d to %d", ErrInvalidConfig, mtu, MinMTU, MaxMTU)
	}
	return nil
}

// checkPrefixes reports a prefix that is invalid or, with fam 4 or 6, of
// the other family: its text would be "invalid Prefix", or the wrong
// command's argument.
func checkPrefixes(what string, fam int, ps ...netip.Prefix) error {
	for _, p := range ps {
		switch {
		case !p.IsValid():
			return fmt.Errorf("%w: %s: not an address range", ErrInvalidConfig, what)
		case fam == 4 && !p.Addr().Is4(), fam == 6 && (!p.Addr().Is6() || p.Addr().Is4In6()):
			return fmt.Errorf("%w: %s %s: not IPv%d", ErrInvalidConfig, what, p, fam)
		}
	}
	return nil
}

// check validates c, filled: what reaches netlink, ip, route, ifconfig and
// netsh.
func (c *Config) check() error {
	if err := checkName(goos, c.Name); err != nil {
		return err
	}
	if err := CheckMTU(c.MTU); err != nil {
		return err
	}
	if c.Addr4.IsValid() {
		if err := checkPrefixes("device address", 4, c.Addr4); err != nil {
			return err
		}
	}
	if c.Addr6.IsValid() {
		if err := checkPrefixes("device address", 6, c.Addr6); err != nil {
			return err
		}
	}
	if err := checkPrefixes("excluded server", 0, c.ExcludeServers...); err != nil {
		return err
	}
	return checkPrefixes("included range", 0, c.Include...)
}

// check validates k, filled: what reaches the nft script, the pf anchor and
// WFP.
func (k *KillSwitch) check() error {
	if err := checkName(goos, k.Device); err != nil {
		return err
	}
	if err := checkPrefixes("server", 0, k.Servers...); err != nil {
		return err
	}
	return checkPrefixes("device address", 0, k.Addrs...)
}
