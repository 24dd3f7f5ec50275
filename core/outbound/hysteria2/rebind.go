package hysteria2

// NetworkChanged retires the live QUIC connection (see
// quicconn.Shared.Retire): the next flow dials a new connection from a new
// socket; the old one keeps carrying its open streams while it still can.
func (c *Client) NetworkChanged() {
	c.conns.Retire()
}
