//go:build linux || darwin

package service

import (
	"net"
	"strconv"
)

// peerID names the caller for the API's per-peer bounds: its uid.
func peerID(_ net.Conn, p *Peer) string { return "uid " + strconv.Itoa(p.UID) }
