package subscription

import "github.com/skiffvpn/skiff/core/node"

// muxOptions is a multiplex's options, nil when all are defaults.
func muxOptions(maxConns, minStreams, maxStreams int, padding bool) *node.MultiplexOptions {
	o := node.MultiplexOptions{MaxConnections: maxConns, MinStreams: minStreams, MaxStreams: maxStreams, Padding: padding}
	if o == (node.MultiplexOptions{}) {
		return nil
	}
	return &o
}
