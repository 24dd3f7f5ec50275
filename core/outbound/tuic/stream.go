package tuic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
)

// DialContext opens a TCP stream to dst through the server. network must
// be "tcp", "tcp4" or "tcp6". TUIC's Connect command has no answer, so it
// returns once the request is sent; a destination the server cannot reach
// shows as the stream ending. A connection found dead on opening the
// stream is replaced and the request sent again, once.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if err := quicconn.CheckStream("tuic", c.srv.Name, network, dst); err != nil {
		return nil, err
	}
	var buf [2 + 1 + 1 + 255 + 2]byte
	req, err := appendConnect(buf[:0], dst)
	if err != nil {
		return nil, fmt.Errorf("tuic: %s via %s: %w", dst, c.srv.Name, err)
	}
	return quicconn.Retry(ctx, c.conns, func(q *qconn) (net.Conn, error) {
		return c.openStream(ctx, q, req)
	}, func(q *qconn, err error) error {
		return fmt.Errorf("tuic: %s via %s: %w", dst, c.srv.Name, c.explain(q, err))
	})
}

// openStream opens a stream on q and sends req on it.
func (c *Client) openStream(ctx context.Context, q *qconn, req []byte) (net.Conn, error) {
	st, err := quicconn.Send(ctx, q.QC, req)
	if err != nil {
		return nil, err
	}
	q.watch()
	return &streamConn{StreamConn: quicconn.NewStreamConn(st, q.QC), c: c, q: q}, nil
}

// streamConn is a TCP flow. Its errors say when the server refused the
// authentication or stopped answering.
type streamConn struct {
	*quicconn.StreamConn
	c     *Client
	q     *qconn
	heard bool // q.heard is set; only Read touches it
}

func (s *streamConn) Read(p []byte) (int, error) {
	n, err := s.StreamConn.Read(p)
	if n > 0 && !s.heard {
		s.heard = true
		s.q.heard.Store(true)
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) && !s.heard:
		// An empty stream: the server may have closed it for want of
		// authentication (sing-box does that, or resets it).
		if e := s.c.explain(s.q, err); e != err {
			err = e
		}
	case !errors.Is(err, io.EOF):
		err = s.c.explain(s.q, err)
	}
	return n, err
}

func (s *streamConn) Write(p []byte) (int, error) {
	n, err := s.StreamConn.Write(p)
	if err != nil {
		err = s.c.explain(s.q, err)
	}
	return n, err
}
