package tun

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	wgtun "golang.zx2c4.com/wireguard/tun"
)

const goos = "darwin"

// openPlatform opens a utun device (the kernel picks utunN), gives it its
// addresses with ifconfig, and routes: the excluded prefixes via the
// current default gateway, then the two halves of each address space into
// the device. Skiff's sockets are bound to the default interface
// (IP_BOUND_IF), which a watcher follows. Strict route loads a pf anchor
// that sends all DNS into the device (see strictDarwin and pfStrictRules).
func openPlatform(t *Tunnel) error {
	cfg := &t.cfg
	t.bind = newBypass(0)
	dev, err := wgtun.CreateTUN("utun", cfg.MTU)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return fmt.Errorf("tun: create utun: %w", ErrPermission)
		}
		return fmt.Errorf("tun: create utun: %w", err)
	}
	t.Device = dev
	if t.name, err = dev.Name(); err != nil {
		return fmt.Errorf("tun: device name: %w", err)
	}
	if p := cfg.Addr4; p.IsValid() {
		mask := net.IP(net.CIDRMask(p.Bits(), 32)).String()
		a := p.Addr().String()
		if err := t.change([]string{"ifconfig", t.name, "inet", a, a, "netmask", mask, "up"}, nil); err != nil {
			return err
		}
	}
	if p := cfg.Addr6; p.IsValid() {
		if err := t.change([]string{"ifconfig", t.name, "inet6", p.Addr().String(), "prefixlen", fmt.Sprint(p.Bits())}, nil); err != nil {
			return err
		}
	}
	t.bind.follow(t, 5*time.Second, defaultInterface)
	if !cfg.AutoRoute {
		return nil
	}
	if cfg.StrictRoute {
		if err := t.strictDarwin(); err != nil {
			return err
		}
	}
	for _, fam := range []int{4, 6} {
		has := (fam == 4 && cfg.Addr4.IsValid()) || (fam == 6 && cfg.Addr6.IsValid())
		if !has {
			continue
		}
		inet := "-inet"
		if fam == 6 {
			inet = "-inet6"
		}
		if gw, ok := defaultGateway(fam); ok {
			for _, p := range exclusions(cfg, fam) {
				if p.Addr().IsLoopback() || p.Addr().IsMulticast() || p.Addr().IsLinkLocalUnicast() {
					continue // these never follow the default route
				}
				if err := t.change(
					[]string{"route", "-n", "add", inet, "-net", p.String(), gw},
					[]string{"route", "-n", "delete", inet, "-net", p.String(), gw},
				); err != nil {
					return err
				}
			}
		}
		for _, p := range splitDefault(fam == 6) {
			if err := t.change(
				[]string{"route", "-n", "add", inet, "-net", p.String(), "-interface", t.name},
				[]string{"route", "-n", "delete", inet, "-net", p.String(), "-interface", t.name},
			); err != nil {
				return err
			}
		}
	}
	return nil
}

// routeGet returns the fields of `route -n get default` for a family.
func routeGet(fam int) map[string]string {
	args := []string{"-n", "get", "default"}
	if fam == 6 {
		args = []string{"-n", "get", "-inet6", "default"}
	}
	out, err := exec.Command("route", args...).Output()
	if err != nil {
		return nil
	}
	m := make(map[string]string)
	for _, l := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

func defaultGateway(fam int) (string, bool) {
	gw := routeGet(fam)["gateway"]
	if _, err := netip.ParseAddr(strings.Split(gw, "%")[0]); err != nil {
		return "", false
	}
	return gw, true
}

// defaultInterface returns the interface of the IPv4 default route that is
// not the tunnel's.
func defaultInterface(skip string) (string, error) {
	name := routeGet(4)["interface"]
	if name == "" || name == skip {
		return "", errors.New("tun: no default interface")
	}
	return name, nil
}

// routeGone reports whether an undo command failed because what it undoes
// is gone: the route, or pf's reference (pfReleaseGone).
func routeGone(err error) bool {
	return strings.Contains(err.Error(), "not in table") || pfReleaseGone(err)
}

// repairPlatform has nothing to put back here: the routes are the
// system's, changed with its commands, and the bypass follows the default
// interface by itself.
func repairPlatform(t *Tunnel) ([]string, error) { return nil, nil }

// DeviceFree returns nil here: the system names the device (macOS), or
// Wintun's adapter (Windows); see tun_linux.go.
func DeviceFree(string) error { return nil }
