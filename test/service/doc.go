// Package service tests `skiff service` end to end: the service runs as
// root in a network namespace the test creates, with a real sing-box
// Hysteria2 server in another; the CLI runs as an unprivileged test user in
// the operators' group (setpriv), imports a subscription, connects in TUN
// mode, carries traffic, reads stats, events and connections, closes a
// connection and disconnects; a user outside the group is refused; bad
// input on the socket is answered and the service keeps serving; kill -9
// of a client leaves the VPN up, and kill -9 of the service is undone by
// its restart.
package service
