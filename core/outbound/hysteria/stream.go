package hysteria

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// DialContext opens a TCP stream to dst through the server. network must
// be "tcp", "tcp4" or "tcp6". It returns once the server has answered the
// request, so a destination the server cannot reach is an error here. A
// connection that turns out dead is replaced and the request sent again,
// once.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if err := quicconn.CheckStream("hysteria", c.name, network, dst); err != nil {
		return nil, err
	}
	if len(dst.Host()) > maxHostLen {
		return nil, fmt.Errorf("hysteria: %.64s… via %s: %w", dst.Host(), c.name, errHostTooLong)
	}
	for attempt := 0; ; attempt++ {
		q, err := c.conns.Get(ctx)
		if err != nil {
			return nil, err
		}
		st, _, err := c.request(ctx, q, false, dst.Host(), dst.Port)
		if err == nil {
			return quicconn.NewStreamConn(st, q.qc), nil
		}
		if attempt > 0 || ctx.Err() != nil || q.alive() {
			return nil, fmt.Errorf("hysteria: %s via %s: %w", dst, c.name, err)
		}
		// The connection died under this request: dial a new one.
	}
}

// request opens a stream on q with a TCP or UDP request and waits for the
// answer. When it fails because q is dead, q is closed (q.alive() is
// false). A refusal is an error with the server's message.
func (c *Client) request(ctx context.Context, q *qconn, udp bool, host string, port uint16) (st *quic.Stream, sid uint32, err error) {
	rx := q.qc.ConnectionStats().PacketsReceived
	st, err = q.qc.OpenStreamSync(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("open stream: %w", err)
	}
	var buf [3 + maxHostLen + 2]byte
	req, err := appendClientRequest(buf[:0], udp, host, port)
	if err != nil {
		st.CancelWrite(0)
		st.CancelRead(0)
		return nil, 0, err
	}
	if _, err := st.Write(req); err != nil {
		st.CancelRead(0)
		st.CancelWrite(0)
		return nil, 0, fmt.Errorf("send request: %w", err)
	}

	// Wait for the answer; ctx cancels the wait through the deadline.
	r := quicconn.StallReader{St: st, QC: q.qc, Ctx: ctx, RX: rx, Stall: quicconn.StallTimeout(q.qc)}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { st.SetReadDeadline(time.Unix(1, 0)) })
	}
	st.SetReadDeadline(time.Now().Add(r.Stall))
	resp, err := readServerResponse(&r)
	if !stop() && err == nil {
		err = ctx.Err() // ctx ended just as the answer came: the deadline is spoilt
	}
	if err != nil {
		st.CancelRead(0)
		st.CancelWrite(0)
		switch {
		case errors.Is(err, quicconn.ErrStalled):
			q.qc.CloseWithError(closeCodeOK, "")
			return nil, 0, err
		case ctx.Err() != nil:
			return nil, 0, fmt.Errorf("waiting for the server's answer: %w", ctx.Err())
		}
		return nil, 0, fmt.Errorf("read answer: %w", err)
	}
	if !resp.OK {
		st.CancelRead(0)
		st.Close()
		if udp {
			return nil, 0, fmt.Errorf("%w: %q", ErrUDPRefused, resp.Message)
		}
		return nil, 0, fmt.Errorf("refused by server: %q", resp.Message)
	}
	st.SetReadDeadline(time.Time{})
	return st, resp.SessionID, nil
}
