package vmess

import (
	"context"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/udpstreams"
)

// maxDatagram is the largest datagram one chunk carries: a chunk's size
// field is 16 bits and covers the tag and the padding.
const maxDatagram = 0xffff - tagSize - maxPadding

// packetConfig is c's UDP sessions': one VMess stream (command UDP) per
// destination, each datagram one chunk.
func (c *Client) packetConfig() udpstreams.Config {
	return udpstreams.Config{
		Proto:    "vmess",
		Server:   c.addr,
		MaxWrite: maxDatagram,
		Dial: func(ctx context.Context, dst flow.Addr) (udpstreams.Stream, error) {
			s, err := c.dialStream(ctx, cmdUDP, dst)
			if err != nil {
				return nil, err
			}
			s.packet = true
			return udpStream{s}, nil
		},
	}
}

// udpStream sends and reads each datagram as one chunk.
type udpStream struct{ *conn }

func (s udpStream) WriteDatagram(p []byte) error {
	_, err := s.Write(p)
	return err
}

func (s udpStream) ReadDatagram(p []byte) (int, error) { return s.readDatagram(p) }

func (s udpStream) Done() <-chan struct{} { return s.closed }
