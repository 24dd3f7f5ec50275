package hysteria2

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

var errStalled = quicconn.ErrStalled

// reqBufPool holds TCP request buffers: a request is at most
// 2+2+2048+2+512 bytes.
var reqBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2600); return &b }}

// DialContext opens a TCP stream to dst through the server. network must
// be "tcp", "tcp4" or "tcp6". It returns once the server has answered the
// stream request, so a destination the server cannot reach is an error
// here. A connection that turns out dead is replaced and the request sent
// again, once.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if err := quicconn.CheckStream("hysteria2", c.name, network, dst); err != nil {
		return nil, err
	}
	addr := dst.String()
	if len(addr) > maxAddressLen {
		return nil, fmt.Errorf("hysteria2: %.64s… via %s: %w", addr, c.name, errAddressTooLong)
	}
	for attempt := 0; ; attempt++ {
		q, err := c.conn(ctx)
		if err != nil {
			return nil, err
		}
		conn, err := c.openStream(ctx, q, addr)
		if err == nil {
			return conn, nil
		}
		if attempt > 0 || ctx.Err() != nil || q.alive() {
			return nil, fmt.Errorf("hysteria2: %s via %s: %w", addr, c.name, err)
		}
		// The connection died under this request: dial a new one.
	}
}

// openStream sends a TCP request for addr on q and waits for the answer.
// When it fails because q is dead, q is closed (q.alive() is false).
func (c *Client) openStream(ctx context.Context, q *qconn, addr string) (net.Conn, error) {
	rx := q.qc.ConnectionStats().PacketsReceived
	st, err := q.qc.OpenStreamSync(ctx)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	bp := reqBufPool.Get().(*[]byte)
	req, _ := appendTCPRequest((*bp)[:0], addr, tcpPaddingMin+rand.IntN(tcpPaddingMax-tcpPaddingMin))
	_, err = st.Write(req)
	*bp = req
	reqBufPool.Put(bp)
	if err != nil {
		st.CancelRead(0)
		st.CancelWrite(0)
		return nil, fmt.Errorf("send request: %w", err)
	}

	// Wait for the answer; ctx cancels the wait through the deadline.
	r := quicconn.StallReader{St: st, QC: q.qc, Ctx: ctx, RX: rx, Stall: stallTimeout(q.qc)}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { st.SetReadDeadline(time.Unix(1, 0)) })
	}
	st.SetReadDeadline(time.Now().Add(r.Stall))
	ok, msg, err := readTCPResponse(&r)
	if !stop() && err == nil {
		err = ctx.Err() // ctx ended just as the answer came: the deadline is spoilt
	}
	if err != nil {
		st.CancelRead(0)
		st.CancelWrite(0)
		switch {
		case errors.Is(err, errStalled):
			q.qc.CloseWithError(closeCodeOK, "")
			return nil, err
		case ctx.Err() != nil:
			return nil, fmt.Errorf("waiting for the server's answer: %w", ctx.Err())
		}
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if !ok {
		st.CancelRead(0)
		st.Close()
		return nil, fmt.Errorf("refused by server: %q", msg)
	}
	st.SetReadDeadline(time.Time{})
	return quicconn.NewStreamConn(st, q.qc), nil
}

// stallTimeout is how long a stream request may go without any packet from
// the server. The server acknowledges the request within an RTT or so,
// even when its own upstream dial takes longer.
func stallTimeout(qc *quic.Conn) time.Duration { return quicconn.StallTimeout(qc) }
