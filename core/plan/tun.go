package plan

import (
	"fmt"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/tun"
)

// TUN is the TUN configuration of the profile's settings over the defaults
// (core.DefaultTUNConfig: strict route on unless the profile turns it off).
//
// The kill switch is the profile's too; the crash monitor is on (the
// executable's cli.Main runs it). A fake-IP range that does not parse is
// left at the default here: CheckTUN refuses it when the profile is saved.
func TUN(s profile.TUN) core.TUNConfig {
	tc := core.DefaultTUNConfig()
	tc.Strict = s.Strict()
	tc.MTU = s.MTU
	tc.Name = s.Name
	tc.KillSwitch = s.KillSwitch
	tc.KillSwitchAllowLAN = s.KillSwitchAllowLAN
	tc.CrashMonitor = true
	if s.FakeIPRange != "" {
		tc.DNS.FakeIPRange4, tc.DNS.FakeIPRange6, _ = core.ParseFakeIPRange(s.FakeIPRange)
	}
	return tc
}

// CheckTUN checks the profile's TUN settings: the device name and MTU by
// the rules tun applies before they reach the system (tun.CheckName).
func CheckTUN(s profile.TUN) error {
	if err := tun.CheckName(s.Name); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if err := tun.CheckMTU(s.MTU); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if s.FakeIPRange != "" {
		if _, _, err := core.ParseFakeIPRange(s.FakeIPRange); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	return nil
}
