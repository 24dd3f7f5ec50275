package hysteria2

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// reqBufPool holds TCP request buffers: a request is at most
// 2+2+2048+2+512 bytes.
var reqBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2600); return &b }}

// DialContext opens a TCP stream to dst through the server. network must
// be "tcp", "tcp4" or "tcp6". It returns once the server has answered the
// stream request, so a destination the server cannot reach is an error
// here. A connection that turns out dead is replaced and the request sent
// again, once.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if err := quicconn.CheckStream("hysteria2", c.srv.Name, network, dst); err != nil {
		return nil, err
	}
	addr := dst.String()
	if len(addr) > maxAddressLen {
		return nil, fmt.Errorf("hysteria2: %.64s… via %s: %w", addr, c.srv.Name, errAddressTooLong)
	}
	return quicconn.Retry(ctx, c.conns, func(q *qconn) (net.Conn, error) {
		return c.openStream(ctx, q, addr)
	}, func(_ *qconn, err error) error {
		return fmt.Errorf("hysteria2: %s via %s: %w", addr, c.srv.Name, err)
	})
}

// openStream sends a TCP request for addr on q and waits for the answer.
// When it fails because q is dead, q is closed (q.Alive() is false).
func (c *Client) openStream(ctx context.Context, q *qconn, addr string) (net.Conn, error) {
	bp := reqBufPool.Get().(*[]byte)
	req, _ := appendTCPRequest((*bp)[:0], addr, tcpPaddingMin+rand.IntN(tcpPaddingMax-tcpPaddingMin))
	rx := q.QC.ConnectionStats().PacketsReceived
	st, err := quicconn.Send(ctx, q.QC, req)
	*bp = req
	reqBufPool.Put(bp)
	if err != nil {
		return nil, err
	}
	var ok bool
	var msg string
	if err := quicconn.Answer(ctx, q.QC, st, rx, closeCodeOK, func(r io.Reader) (err error) {
		ok, msg, err = readTCPResponse(r)
		return err
	}); err != nil {
		return nil, err
	}
	if !ok {
		st.CancelRead(0)
		st.Close()
		return nil, fmt.Errorf("refused by server: %q: %w", msg, outbound.ErrTargetRefused)
	}
	return quicconn.NewStreamConn(st, q.QC), nil
}
