package hysteria2

import "time"

// NetworkChanged retires the live QUIC connection (see
// quicconn.Shared.Retire): the next flow dials a new connection from a new
// socket; the old one keeps carrying its open streams while it still can.
func (c *Client) NetworkChanged() {
	c.conns.Retire(retiredLinger, func(q *qconn) <-chan struct{} { return q.qc.Context().Done() })
}

// retiredLinger is how long a retired connection may go on carrying its
// streams while no new connection replaces it.
const retiredLinger = 2 * time.Minute
