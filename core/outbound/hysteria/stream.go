package hysteria

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// DialContext opens a TCP stream to dst through the server. network must
// be "tcp", "tcp4" or "tcp6". It returns once the server has answered the
// request, so a destination the server cannot reach is an error here. A
// connection that turns out dead is replaced and the request sent again,
// once.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if err := quicconn.CheckStream("hysteria", c.srv.Name, network, dst); err != nil {
		return nil, err
	}
	if len(dst.Host()) > maxHostLen {
		return nil, fmt.Errorf("hysteria: %.64s… via %s: %w", dst.Host(), c.srv.Name, errHostTooLong)
	}
	return quicconn.Retry(ctx, c.conns, func(q *qconn) (net.Conn, error) {
		st, _, err := c.request(ctx, q, false, dst.Host(), dst.Port)
		if err != nil {
			return nil, err
		}
		return quicconn.NewStreamConn(st, q.QC), nil
	}, func(_ *qconn, err error) error {
		return fmt.Errorf("hysteria: %s via %s: %w", dst, c.srv.Name, err)
	})
}

// request opens a stream on q with a TCP or UDP request and waits for the
// answer. When it fails because q is dead, q is closed (q.Alive() is
// false). A refusal is an error with the server's message.
func (c *Client) request(ctx context.Context, q *qconn, udp bool, host string, port uint16) (st *quic.Stream, sid uint32, err error) {
	var buf [3 + maxHostLen + 2]byte
	req, err := appendClientRequest(buf[:0], udp, host, port)
	if err != nil {
		return nil, 0, err
	}
	rx := q.QC.ConnectionStats().PacketsReceived
	if st, err = quicconn.Send(ctx, q.QC, req); err != nil {
		return nil, 0, err
	}
	var resp serverResponse
	if err := quicconn.Answer(ctx, q.QC, st, rx, closeCodeOK, func(r io.Reader) (err error) {
		resp, err = readServerResponse(r)
		return err
	}); err != nil {
		return nil, 0, err
	}
	if !resp.OK {
		st.CancelRead(0)
		st.Close()
		if udp {
			return nil, 0, fmt.Errorf("%w: %q", ErrUDPRefused, resp.Message)
		}
		return nil, 0, fmt.Errorf("refused by server: %q: %w", resp.Message, outbound.ErrTargetRefused)
	}
	return st, resp.SessionID, nil
}
