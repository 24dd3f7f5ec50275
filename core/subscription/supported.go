package subscription

import (
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/node"
)

// Supported reports whether Skiff can dial n yet, and if not, why, in
// plain words. Nodes that cannot be dialed are kept and shown, not
// dropped. It is core.Supported: the protocol constructors decide.
func Supported(n *node.Node) (ok bool, reason string) {
	return core.Supported(n)
}
