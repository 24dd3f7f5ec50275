package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/protocol"
)

// Live switching: the route's target (TargetProxy) is a switchable
// outbound whose inside is replaced while the core runs, so a user's pick
// moves new flows at once and the listener, the TUN and the flows open
// on the old pick stay (or are closed, as the caller asks).

// ErrNeedsReconnect is returned by Reselect when a change cannot be made
// live: in TUN mode, a server the tunnel was not opened for (its address
// is not excluded from the tunnel's routes and kill switch).
var ErrNeedsReconnect = errors.New("core: the change needs a new connection")

// liveRoute is what the route's target carries now.
type liveRoute struct {
	ob    outbound.Outbound
	group *group.Group // nil for one node
	name  string       // the one node's name (group == nil)
}

// switchable is the route's outbound: it dials through whatever route
// was set last. Flows already dialled keep their connection.
type switchable struct{ cur atomic.Pointer[liveRoute] }

func (s *switchable) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	l := s.cur.Load()
	if l.group == nil {
		group.ReportPick(ctx, l.name)
	}
	return l.ob.DialContext(ctx, network, dst)
}

func (s *switchable) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	l := s.cur.Load()
	if l.group == nil {
		group.ReportPick(ctx, l.name)
	}
	return l.ob.ListenPacket(ctx, dst)
}

// Close does nothing: the routing closes the groups and nodes it built.
func (s *switchable) Close() error { return nil }

var _ outbound.Outbound = (*switchable)(nil)

// nodeKey identifies a node's configuration, so that a node picked again
// reuses the outbound built for it (a switch back and forth builds
// nothing new).
func nodeKey(n *node.Node) string {
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Sprintf("%p", n)
	}
	return string(b)
}

// outboundFor returns the outbound of n, built once per configuration.
// r.mu is held.
func (r *routing) outboundFor(n *node.Node) (outbound.Outbound, error) {
	k := nodeKey(n)
	if ob := r.byKey[k]; ob != nil {
		return ob, nil
	}
	ob, err := protocol.NewOutbound(n, r.dialer)
	if err != nil {
		return nil, err
	}
	r.byKey[k] = ob
	r.nodes = append(r.nodes, ob)
	return ob, nil
}

// Reselect applies cfg's picks to the running core without a new
// connection: the route (cfg.Nodes in cfg.Mode, starting on
// cfg.Selected) replaces the running one for new flows, and every
// selector target of cfg that runs as a group takes its Selected. When
// the route's servers and mode are those running and it is a selector,
// its member is selected in place (its health is kept). Rules and the
// other targets stay as connected. closeOld closes the open flows the
// switch moved away from: the route's flows not on its new member and a
// target's flows on its old member. It returns how many flows it closed.
// ErrNeedsReconnect: see there; ErrNoServer: cfg has no nodes.
func (c *Controller) Reselect(cfg Config, closeOld bool) (closed int, err error) {
	c.op.Lock() // not while a Stop closes the routing
	defer c.op.Unlock()
	r := c.current()
	if r == nil {
		return 0, ErrNotRunning
	}
	if len(cfg.Nodes) == 0 {
		return 0, ErrNoServer
	}
	rt := r.routing
	if rt.live == nil {
		return 0, errors.New("core: the run has no route to switch")
	}
	if r.tun != nil {
		for _, n := range cfg.Nodes {
			if !r.servers[n.Server] {
				return 0, fmt.Errorf("%w: in TUN mode the tunnel lets only the servers it was opened for pass (%s is new)", ErrNeedsReconnect, n.Server)
			}
		}
	}
	var moved []string // targets whose flows to check
	if err := rt.setRoute(cfg.Nodes, cfg.Mode, cfg.Selected); err != nil {
		return 0, err
	}
	moved = append(moved, TargetProxy)
	c.publishSwitched()
	prev := map[string]string{}
	for _, t := range cfg.Targets {
		if t.Mode != group.Selector || t.Selected == "" {
			continue
		}
		g, ok := rt.targets[t.Name].(*group.Group)
		if !ok || g.Mode() != group.Selector {
			continue
		}
		prev[t.Name] = g.Current()
		if err := g.Select(t.Selected); err != nil {
			return 0, fmt.Errorf("core: target %s: %w", t.Name, err)
		}
		moved = append(moved, t.Name)
	}
	if !closeOld {
		return 0, nil
	}
	cur := map[string]string{}
	for _, name := range moved {
		if name == TargetProxy {
			cur[name] = rt.current()
			continue
		}
		cur[name] = rt.targets[name].(*group.Group).Current()
	}
	for _, ci := range r.stats.Connections() {
		now, ok := cur[ci.Outbound]
		if !ok || ci.Member == now {
			continue
		}
		if p, isTarget := prev[ci.Outbound]; isTarget && ci.Member != p {
			continue // a target's flow on a member the switch did not leave
		}
		if r.stats.CloseConnection(ci.ID) {
			closed++
		}
	}
	return closed, nil
}

// ErrNotRunning is returned by a live change or an Exit check asked of a
// stopped core.
var ErrNotRunning = errors.New("core: not running")

// SetRouting changes how new flows are routed (see Routing) while the core
// runs: flows open stay where they are, as after a Reselect. The status
// reports it, and subscribers hear of it as a state event. ErrNotRunning:
// stopped; ErrNoServer: global routing in a run without a route.
func (c *Controller) SetRouting(m Routing) error {
	c.op.Lock() // not while a Stop closes the routing
	defer c.op.Unlock()
	r := c.current()
	if r == nil {
		return ErrNotRunning
	}
	if err := r.routing.setRouting(m); err != nil {
		return err
	}
	c.log.Info("core: routing", "routing", string(m))
	c.publishSwitched()
	return nil
}

// setRoute puts nodes (in mode, starting on selected) behind the route's
// outbound. A selector over the same members selects in place.
func (r *routing) setRoute(nodes []*node.Node, mode group.Mode, selected string) error {
	if mode == "" {
		mode = group.Failover
	}
	// The group's Select reports the switch (onSwitch), which reads the
	// status and so r.mu: it is called with r.mu released.
	r.mu.Lock()
	g := r.group
	r.mu.Unlock()
	if g != nil && g.Mode() == group.Selector && mode == group.Selector && sameMembers(g.Members(), nodes) {
		if selected == "" {
			return nil
		}
		return g.Select(selected)
	}
	r.mu.Lock()
	ms := make([]group.Member, 0, len(nodes))
	for i, n := range nodes {
		ob, err := r.outboundFor(n)
		if err != nil {
			r.mu.Unlock()
			return fmt.Errorf("server %d: %w", i+1, err)
		}
		ms = append(ms, group.Member{Name: nodeName(n), Outbound: ob})
	}
	r.mu.Unlock()
	next := &liveRoute{ob: ms[0].Outbound, name: ms[0].Name}
	if len(ms) > 1 {
		g, err := group.New(TargetProxy, mode, ms, group.Options{Policy: r.policy, OnEvent: r.onSwitch, Log: r.log, Shared: true})
		if err != nil {
			return err
		}
		if mode == group.Selector && selected != "" {
			if err := g.Select(selected); err != nil {
				g.Close()
				return fmt.Errorf("core: group: %w", err)
			}
		}
		next.ob, next.group = g, g
	}
	r.mu.Lock()
	old := r.group
	if next.group != nil {
		r.groups = append(r.groups, next.group)
	}
	r.live.cur.Store(next)
	r.group = next.group
	if next.group != nil {
		r.proxy = TargetProxy
	} else {
		r.proxy = next.name
	}
	if old != nil {
		r.groups = removeGroup(r.groups, old)
	}
	r.mu.Unlock()
	if old != nil {
		// It stops probing; its members stay open for the flows they
		// carry (the routing closes every outbound at Stop).
		old.Close()
	}
	return nil
}

// current is the member of the route that takes new flows.
func (r *routing) current() string {
	r.mu.Lock()
	g, l := r.group, r.live
	r.mu.Unlock()
	if g != nil {
		return g.Current()
	}
	if l != nil {
		return l.cur.Load().name
	}
	return ""
}

func sameMembers(ms []group.MemberState, nodes []*node.Node) bool {
	if len(ms) != len(nodes) {
		return false
	}
	for i, n := range nodes {
		if ms[i].Name != nodeName(n) {
			return false
		}
	}
	return true
}

func removeGroup(gs []*group.Group, g *group.Group) []*group.Group {
	out := gs[:0]
	for _, x := range gs {
		if x != g {
			out = append(out, x)
		}
	}
	return out
}

// publishSwitched tells the subscribers the route changed: the status's
// outbound and member are those of the new pick.
func (c *Controller) publishSwitched() {
	if r := c.current(); r != nil {
		r.exit.forget()
	}
	st := c.Status()
	c.events.publish(Event{Time: time.Now(), Kind: EventState, Status: st})
}
