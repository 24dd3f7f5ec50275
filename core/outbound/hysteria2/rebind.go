package hysteria2

import "time"

// NetworkChanged retires the live QUIC connection: the network under it
// changed (a new uplink, a resume from sleep), and the connection is bound
// to a socket whose source address may be gone and to a NAT mapping the
// way to the server may have dropped, so it would stay silent until its
// idle time-out. The next flow dials a new connection from a new socket;
// the old one keeps carrying its open streams while it still can, and is
// closed once the new one is up, or after retiredLinger with no new one
// (the run goroutine closes it when quic-go gives up on it before that).
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
		linger := time.NewTimer(retiredLinger)
		defer linger.Stop()
		select {
		case <-old.qc.Context().Done():
		case <-c.ctx.Done():
		case <-c.newConn(old, linger.C):
		}
		old.qc.CloseWithError(closeCodeOK, "")
	}()
}

// retiredLinger is how long a retired connection may go on carrying its
// streams while no new connection replaces it.
const retiredLinger = 2 * time.Minute

// newConn returns a channel closed once a live connection other than old
// is up, the client closes, old dies or stop fires; it polls, as a change
// is rare.
func (c *Client) newConn(old *qconn, stop <-chan time.Time) <-chan struct{} {
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
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return ch
}
