package hysteria2

import "time"

// NetworkChanged retires the live QUIC connection: the network under it
// changed (a new uplink, a resume from sleep), and the connection is bound
// to a socket whose source address may be gone and to a NAT mapping the
// way to the server may have dropped, so it would stay silent until its
// idle time-out. The next flow dials a new connection from a new socket;
// the old one keeps carrying its open streams while it still can, and is
// closed once the new one is up (the run goroutine closes it when quic-go
// gives up on it before that).
func (c *Client) NetworkChanged() {
	c.mu.Lock()
	old := c.cur
	c.cur = nil
	c.mu.Unlock()
	if old == nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-old.qc.Context().Done():
		case <-c.ctx.Done():
		case <-c.newConn(old):
		}
		old.qc.CloseWithError(closeCodeOK, "")
	}()
}

// newConn returns a channel closed once a live connection other than old
// is up, or the client closes; it polls, as a change is rare.
func (c *Client) newConn(old *qconn) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			c.mu.Lock()
			cur, closed := c.cur, c.closed
			c.mu.Unlock()
			if closed || (cur != nil && cur != old && cur.alive()) {
				return
			}
			select {
			case <-c.ctx.Done():
				return
			case <-old.qc.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return ch
}
