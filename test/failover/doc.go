// Package failover proves Skiff's failover group under real faults: two
// network namespaces joined by a veth pair, sing-box serving Hysteria2
// (primary) and VLESS over WebSocket over TLS (fallback) in the server
// namespace, Skiff in the client namespace, and nftables rules inside the
// server namespace that make packets vanish (a block, a 10 % loss) while a
// client loop opens new HTTP connections through Skiff at a steady rate and
// one long download runs.
//
// The HTTP origin in the server namespace answers /small with the source
// address of the connection it got; each sing-box server sends its egress
// from an address of its own, so every answer says which member carried it
// (see Topology). The tests report figures (failed connections, switch
// times, switches per minute) with t.Logf; `go test -v` shows them.
//
// The client side is a Dialer: the SOCKS5 inbound today; a TUN variant is a
// Dialer that dials the origin directly in the client namespace, whose
// default route goes into Skiff's TUN.
//
// Everything here needs root (namespaces, nftables); the tests skip without
// it. FAILOVER_LONG=1 runs minute-long phases, repeated block trials and the
// comparison with sing-box's urltest as the client.
package failover
