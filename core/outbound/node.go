package outbound

import (
	"fmt"

	"github.com/skiffvpn/skiff/core/node"
)

// NodeAddress checks what every client's New checks first: n is a node
// with proto's options (has: n != nil && n.<Proto> != nil; kind names them
// in the error) and a server address. It returns that address
// (n.Address()); errors start with proto.
func NodeAddress(n *node.Node, has bool, proto, kind string) (string, error) {
	if !has {
		return "", fmt.Errorf("%s: node has no %s options", proto, kind)
	}
	if n.Server == "" || n.Port == 0 {
		return "", fmt.Errorf("%s: node has no server address", proto)
	}
	return n.Address(), nil
}
