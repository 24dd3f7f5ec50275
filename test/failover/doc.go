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
// The client side is a Dialer: TestFailover goes through Skiff's SOCKS5
// inbound (SOCKSDialer); TestFailoverTUN runs `skiff run --tun`
// (StartSkiffTUN) and dials the origin directly in the client namespace
// (DirectDialer), so that the TUN captures the connections.
//
// Everything here needs root (namespaces, nftables); the tests skip without
// it. FAILOVER_LONG=1 runs minute-long phases, repeated block trials and the
// comparison with sing-box's urltest as the client.
package failover
