package service

import (
	"fmt"
	"runtime"
)

// Name is the service's name in the OS service manager.
const Name = "skiff"

// PackagedBinary is where the packages install skiff; the unit they ship
// (skiff service unit) runs it from there.
const PackagedBinary = "/usr/bin/skiff"

// Unit returns the systemd unit that runs exe as the service. It is the
// one copy of the unit: `skiff service install` writes it with its own
// path, and the .deb/.rpm ship `skiff service unit`'s output (with
// PackagedBinary).
//
// The service runs as root: it opens the TUN device and changes routes,
// policy rules, nftables and DNS. After a crash, ExecStopPost restores the
// routes at once (the restarted service would also do it first).
func Unit(exe string) string {
	return fmt.Sprintf(`[Unit]
Description=Skiff VPN service
Documentation=https://github.com/skiffvpn/skiff
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=%[1]s service
ExecStopPost=%[1]s cleanup
Restart=on-failure
RestartSec=2
StateDirectory=skiff
StateDirectoryMode=0700
NoNewPrivileges=yes
ProtectHome=yes
PrivateTmp=yes
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
`, exe)
}

// InstallHint is the command that installs the service on this OS, for
// messages that say a service is needed.
func InstallHint() string {
	switch runtime.GOOS {
	case "windows":
		return "install it with  skiff service install  in an administrator terminal"
	case "darwin", "linux":
		return "install it with  sudo skiff service install"
	}
	return "the Skiff service is not available on " + runtime.GOOS
}
