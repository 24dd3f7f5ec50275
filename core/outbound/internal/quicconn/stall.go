package quicconn

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/quic-go/quic-go"
)

// ErrStalled says the server acknowledged nothing while a stream request
// waited for its answer: the connection is dead even if QUIC has not timed
// out yet (a restarted server drops the old connection's packets).
var ErrStalled = errors.New("server not responding")

// StallReader reads a stream request's answer under a rolling deadline:
// each time the deadline passes it checks that packets came from the
// server meanwhile, and gives up with ErrStalled when none did. The caller
// sets the stream's first read deadline to now + Stall.
type StallReader struct {
	St    *quic.Stream
	QC    *quic.Conn
	Ctx   context.Context
	RX    uint64 // packets received before the request was sent
	Stall time.Duration
}

// Read reads from the stream (see StallReader).
func (r *StallReader) Read(p []byte) (int, error) {
	for {
		n, err := r.St.Read(p)
		if n > 0 || err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if err := r.Ctx.Err(); err != nil {
			return 0, err
		}
		rx := r.QC.ConnectionStats().PacketsReceived
		if rx == r.RX {
			return 0, ErrStalled
		}
		r.RX = rx
		r.St.SetReadDeadline(time.Now().Add(r.Stall))
		if err := r.Ctx.Err(); err != nil {
			return 0, err // ctx ended while the deadline was reset
		}
	}
}
