package tun

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	wgtun "golang.zx2c4.com/wireguard/tun"
)

// netnsChildEnv marks the test binary run by inNetns inside a network
// namespace of its own.
const netnsChildEnv = "SKIFF_TUN_TEST_NETNS"

// inNetns runs the calling test again in a new network namespace (unshare
// -n) and reports whether this is that run. The namespace, and every
// device made in it, goes with the process.
func inNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsChildEnv) == "1" {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace, TUN devices)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip")
	}
	cmd := exec.Command("unshare", "--net", os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), netnsChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a network namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in a network namespace, the test did not pass:\n%s", out)
	}
	t.Logf("in a network namespace:\n%s", out)
	return false
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// TestOpenRefusesExistingDevice is issue 28's device takeover: a name that
// another program's device has (a persistent free tun, which TUNSETIFF
// would attach to and Close would delete; a tap, which the failed create's
// undo deleted; a veth) is refused before anything is recorded, and the
// device is still there, with its index, afterwards. A cleanup of a
// recorded link (a state file of an older Skiff) deletes nothing either.
func TestOpenRefusesExistingDevice(t *testing.T) {
	if !inNetns(t) {
		return
	}
	ipCmd(t, "tuntap", "add", "mode", "tun", "name", "s1tun0")
	ipCmd(t, "tuntap", "add", "mode", "tap", "name", "s1tap0")
	ipCmd(t, "link", "add", "s1veth0", "type", "veth", "peer", "name", "s1veth1")
	for _, name := range []string{"s1tun0", "s1tap0", "s1veth0"} {
		before, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		state := filepath.Join(t.TempDir(), "tun-state.json")
		tn, err := Open(Config{Name: name, MTU: 1500, StateFile: state, Addr4: DefaultAddr4})
		if err == nil {
			tn.Close()
			t.Errorf("Open(%s) took another program's device", name)
		} else if !errors.Is(err, ErrDeviceExists) {
			t.Errorf("Open(%s) = %v, want ErrDeviceExists", name, err)
		} else {
			t.Logf("Open(%s): %v", name, err)
		}
		if HasLeftovers(state) {
			t.Errorf("Open(%s) left a state file", name)
		}
		after, err := netlink.LinkByName(name)
		if err != nil || after.Attrs().Index != before.Attrs().Index {
			t.Errorf("%s after Open: %v %v (index %d before)", name, after, err, before.Attrs().Index)
		}

		// A state file that records the name as Skiff's link.
		st := newStateFile(state)
		if err := st.record(Change{Kind: "link", Link: name}); err != nil {
			t.Fatal(err)
		}
		if err := Cleanup(state, nil); err != nil {
			t.Errorf("Cleanup of a recorded %s: %v", name, err)
		}
		if _, err := netlink.LinkByName(name); err != nil {
			t.Errorf("Cleanup of a state file that records %s deleted it: %v", name, err)
		}
	}

	// The check after the create: attaching to a persistent tun is seen.
	dev, err := wgtun.CreateTUN("s1tun0", 1500)
	if err != nil {
		t.Fatal(err)
	}
	p, err := persistent(dev)
	dev.Close()
	if err != nil || !p {
		t.Errorf("persistent(attached s1tun0) = %v, %v", p, err)
	}
	if _, err := netlink.LinkByName("s1tun0"); err != nil {
		t.Errorf("closing the attached s1tun0 deleted it: %v", err)
	}

	// A free name: Skiff's own device, not persistent, gone with Close.
	state := filepath.Join(t.TempDir(), "tun-state.json")
	tn, err := Open(Config{Name: "s1new0", MTU: 1500, StateFile: state, Addr4: DefaultAddr4})
	if err != nil {
		t.Fatalf("Open(s1new0): %v", err)
	}
	if p, err := persistent(tn.Device); err != nil || p {
		t.Errorf("persistent(own device) = %v, %v", p, err)
	}
	if err := tn.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName("s1new0"); err == nil {
		t.Error("Skiff's device outlived Close")
	}
	if HasLeftovers(state) {
		t.Error("state file left after Close")
	}
}
