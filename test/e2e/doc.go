// Package e2e runs skiff end to end against real sing-box servers on
// loopback: skiff runs as `skiff run --link … --listen …`, and the tests
// drive TCP, UDP and HTTP traffic through its local SOCKS5 and HTTP proxy,
// and check that failures come back quickly and clearly. The port hopping
// test (root only) runs the server and skiff in network namespaces instead,
// with an nftables-redirected port range in front of the server.
//
// SKIFF_E2E_CLIENT=sing-box runs the traffic tests with sing-box as the
// client instead, which checks the harness itself.
package e2e
