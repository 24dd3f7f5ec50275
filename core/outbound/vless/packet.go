package vless

import (
	"context"
	"sync"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
	"github.com/skiffvpn/skiff/core/outbound/internal/udpstreams"
)

// packetBufs holds buffers for framed datagrams on their way out.
var packetBufs = sync.Pool{New: func() any {
	b := make([]byte, 2+maxPacket)
	return &b
}}

// packetConfig is c's UDP sessions': one VLESS stream (command UDP) per
// destination, each carrying u16-length-prefixed datagrams.
func (c *Client) packetConfig() udpstreams.Config {
	return udpstreams.Config{
		Proto:    "vless",
		Server:   c.addr,
		MaxWrite: maxPacket,
		Dial: func(ctx context.Context, dst flow.Addr) (udpstreams.Stream, error) {
			conn, err := c.dialStream(ctx, cmdUDP, dst)
			if err != nil {
				return nil, err
			}
			return &udpStream{Conn: conn}, nil
		},
		ReadAfterWrite: true, // the request goes with the first datagram
	}
}

// udpStream frames the datagrams of one destination's stream.
type udpStream struct {
	*reqconn.Conn
	hdr [2]byte // the reader's length prefix
}

func (s *udpStream) WriteDatagram(p []byte) error {
	bp := packetBufs.Get().(*[]byte)
	frame, _ := appendPacket((*bp)[:0], p)
	_, err := s.Write(frame)
	packetBufs.Put(bp)
	return err
}

func (s *udpStream) ReadDatagram(p []byte) (int, error) {
	return udpstreams.ReadFramed(s.Conn, &s.hdr, p)
}
