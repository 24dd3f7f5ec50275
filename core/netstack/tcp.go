package netstack

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
)

// handleTCP runs on a goroutine of gVisor's forwarder for each new SYN. It
// asks the handler to connect upstream; only the handler's accept completes
// the handshake toward the app. Until then the SYN is held (the app's
// retransmissions are absorbed by the forwarder), and if the handler gives
// up without accepting, the app gets an RST.
func (n *Stack) handleTCP(r *tcp.ForwarderRequest) {
	id := r.ID()
	m := flow.Metadata{
		Network:     flow.TCP,
		Source:      addrPort(id.RemoteAddress, id.RemotePort),
		Destination: flow.AddrFromAddrPort(addrPort(id.LocalAddress, id.LocalPort)),
		Inbound:     "tun",
	}
	n.wg.Add(1)
	defer n.wg.Done()

	var (
		mu        sync.Mutex
		completed bool
		counted   bool // by the buffer budget
	)
	accept := func() (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if completed {
			return nil, errors.New("netstack: accept called twice")
		}
		completed = true
		// Counted before the endpoint is made, so that it starts with
		// the buffer defaults of the new count.
		if err := n.budget.add(1); err != nil {
			n.log.Debug("netstack: tcp buffer budget", "err", err)
		}
		counted = true
		var wq waiter.Queue
		ep, err := r.CreateEndpoint(&wq)
		if err != nil {
			r.Complete(true)
			return nil, fmt.Errorf("netstack: accept %s from %s: %s", m.Destination, m.Source, err)
		}
		r.Complete(false)
		so := ep.SocketOptions()
		so.SetReceiveBufferSize(int64(n.budget.initial()), false)
		so.SetKeepAlive(true)
		so.SetDelayOption(false)
		return newTCPConn(&wq, ep), nil
	}
	err := guard.Do(n.ctx, "tun tcp flow", func() error { return n.handler.HandleStream(n.ctx, m, accept) })
	mu.Lock()
	if !completed {
		completed = true
		r.Complete(true) // RST: the upstream could not be had
	}
	if counted {
		if err := n.budget.add(-1); err != nil {
			n.log.Debug("netstack: tcp buffer budget", "err", err)
		}
	}
	mu.Unlock()
	if err != nil {
		n.log.Debug("netstack: tcp flow", "src", m.Source, "dst", m.Destination, "err", err)
	}
}
