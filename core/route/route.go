// Package route decides where a flow goes: given what is known about it
// (flow.Metadata), which outbound carries it. This file is the one place to
// open to answer "where does a flow get its outbound?".
//
// For now there is one rule, the final one: everything goes to the default
// outbound. Rules (domain, CIDR, port, …) and failover groups will be added
// behind the same Router interface; the engine does not change when they do.
package route

import (
	"errors"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
)

// Router picks the outbound for a flow.
//
// Route is called once per flow, before anything is dialed, on the flow's
// own goroutine; it must be safe for concurrent use and must not block on
// the network. It returns the outbound and the name under which the flow is
// shown and counted (a node, a group, "direct", "block"). It may fill in
// m.Host (for example from a fake-IP pool). An error refuses the flow.
type Router interface {
	Route(m *flow.Metadata) (out outbound.Outbound, name string, err error)
}

// Final is a Router that sends every flow to one outbound.
type Final struct {
	Name     string
	Outbound outbound.Outbound
}

// ErrNoOutbound is returned by a Router that has nowhere to send a flow.
var ErrNoOutbound = errors.New("route: no outbound configured")

// Route returns r's outbound.
func (r *Final) Route(*flow.Metadata) (outbound.Outbound, string, error) {
	if r.Outbound == nil {
		return nil, "", ErrNoOutbound
	}
	return r.Outbound, r.Name, nil
}
