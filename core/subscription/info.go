package subscription

import (
	"regexp"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

// Providers list their account's state as nodes: "剩余流量：98.5 GB",
// "套餐到期：2026-12-31", "Expire: …", "Traffic: …", their web site. They
// point at no server (or at a dummy one), so they are kept in the list for
// the user to read but never probed, dialled or put into a group.
var infoLine = regexp.MustCompile(`(?i)剩余流量|剩餘流量|套餐到期|到期时间|到期時間|过期时间|過期時間|距离下次重置|距離下次重置|重置剩余|官网|官網|expire|traffic|remaining data|data left|bandwidth left`)

// InfoLine reports whether a node's name is a line of the provider's
// information rather than a server's.
func InfoLine(name string) bool { return infoLine.MatchString(name) }

// unusable is protocol.Unusable, and an information line is no server.
func unusable(n *node.Node) (string, *node.Lack) {
	if InfoLine(n.Name) {
		return "a line of the provider's information (" + n.Name + "), not a server", &node.Lack{Feature: node.FeatureInfo, Value: n.Name}
	}
	return protocol.Unusable(n)
}
