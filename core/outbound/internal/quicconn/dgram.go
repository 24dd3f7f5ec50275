package quicconn

import (
	_ "unsafe" // go:linkname
)

// MaxDatagramFrameSize is the max_datagram_frame_size transport parameter
// (RFC 9221) every QUIC connection of Skiff's advertises: the largest
// DATAGRAM frame, frame type and length included, the server may send.
// It is the official Hysteria 2 client's figure (apernet/hysteria
// core/internal/protocol.MaxDatagramFrameSize).
//
// quic-go advertises 16383 and has no setting for it. Servers on
// apernet's quic-go fork (the official Hysteria 2 server, v2.7.1) then
// drop every server-to-client datagram of more than about 1250 bytes, and
// every fragment of larger ones: the fork caps a datagram at the peer's
// figure or the path MTU, but compares the MTU, a packet size, with the
// payload, and its packer silently discards what does not fit a packet.
// Measured against that server on loopback before this cap: datagrams of
// 1392 to 3000 bytes (messages of more than 1415 bytes once path MTU
// discovery reached 1441) never arrived; 1 to 1391 did. With 1200 the
// server's limit is 1197 payload bytes, which fits a 1280-byte packet
// (1280 - 1 - 20 connection ID - 4 packet number - 16 tag - 3 frame
// header = 1236), so it fragments everything larger, as it does for its
// own client. Servers that size datagrams correctly (sing-box's) merely
// fragment from 1197 bytes on instead of sending one datagram per packet.
const MaxDatagramFrameSize = 1200

// quicMaxDatagramSize is quic-go's advertised max_datagram_frame_size,
// read when a connection is created (and to reject larger incoming
// frames). It is a variable so that quic-go's own tests can change it;
// Skiff sets it once, before main runs, and never again. The linkname
// breaks the build if quic-go renames it; TestMaxDatagramFrameSize
// catches quic-go ignoring it.
//
//go:linkname quicMaxDatagramSize github.com/quic-go/quic-go/internal/wire.MaxDatagramSize
var quicMaxDatagramSize uint64 // protocol.ByteCount

func init() { quicMaxDatagramSize = MaxDatagramFrameSize }
