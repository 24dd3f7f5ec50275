package core

import (
	"log/slog"

	"github.com/skiffvpn/skiff/core/netmon"
)

// networkChanger is an outbound that holds connections bound to the
// network it dialled them on (Hysteria2's QUIC connection) and drops them
// when told the network changed.
type networkChanger interface{ NetworkChanged() }

// watchNetwork starts the run's network monitor (package netmon). On a
// change or a resume:
//   - the tunnel puts back the routes and rules the OS dropped, and the
//     bypass binds to the new default interface (macOS, Windows; on Linux
//     the fwmark follows the main table by itself);
//   - outbounds re-dial their long-lived connections from new sockets;
//     each dial resolves the server's name afresh, so a server that moved
//     is found at its new address.
//
// The fake-IP table is the DNS handler's and stays as it is: apps keep
// the addresses they were given.
func watchNetwork(r *run, log *slog.Logger) *netmon.Monitor {
	cfg := netmon.Config{Logger: log}
	if r.tun != nil {
		cfg.Ignore = r.tun.tunnel.Name()
	}
	return netmon.Start(cfg, func(ev netmon.Event) { r.networkChanged(ev, log) })
}

func (r *run) networkChanged(ev netmon.Event, log *slog.Logger) {
	if r.tun != nil {
		fixed, err := r.tun.tunnel.NetworkChanged()
		if len(fixed) > 0 {
			log.Warn("tun: re-installed what the network change removed", "changes", fixed)
		}
		if err != nil {
			log.Error("tun: re-install routes after a network change", "err", err)
		}
	}
	for _, o := range r.routing.nodes {
		if nc, ok := o.(networkChanger); ok {
			nc.NetworkChanged()
		}
	}
}
