package shadowtls

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"hash"
	"io"
	"net"
	"sync"
)

// Versions 1 and 2 (ihciah/shadow-tls docs/protocol-en.md) are older and
// weaker than 3, kept because subscriptions still carry them (v2 is
// mihomo's default when a node names no version):
//   - v1: a TLS handshake with the site through the server (which watches
//     for its end, so the site must speak TLS 1.2), then the inner
//     protocol's bytes as they are. Nothing proves either side; a censor
//     that looks past the handshake sees no TLS records.
//   - v2: the same handshake (any TLS version), then every write as
//     ApplicationData records, the first one's data led by 8 bytes of
//     HMAC-SHA1(password) over all the server sent during the handshake,
//     by which the server tells the client from a prober (that one is
//     relayed to the site). The server proves nothing to the client, and
//     its records carry no tag.

// v2PrefixSize is the length of v2's first-record HMAC.
const v2PrefixSize = 8

// hashingConn feeds every byte read into mac.
type hashingConn struct {
	net.Conn
	mac hash.Hash
}

func (h *hashingConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	h.mac.Write(p[:n])
	return n, err
}

// handshakeV1V2 runs the site's handshake over raw (the server relays it
// untouched) and returns the connection of version c.version.
func (c *Client) handshakeV1V2(ctx context.Context, raw net.Conn) (net.Conn, error) {
	hc := &hashingConn{Conn: raw, mac: hmac.New(sha1.New, c.password)}
	uc, err := c.fp.UClient(hc, c.ucfg.Clone(), c.alpn)
	if err != nil {
		return nil, fmt.Errorf("shadowtls: %w", err)
	}
	if err := uc.HandshakeContext(ctx); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("shadowtls: handshake with %s: %w", c.ucfg.ServerName, err)
	}
	if c.version == 1 {
		return raw, nil
	}
	return &v2Conn{Conn: raw, prefix: hc.mac.Sum(nil)[:v2PrefixSize]}, nil
}

// v2Conn is a connection after v2's switch: ApplicationData records both
// ways, the first written one led by the handshake's HMAC.
type v2Conn struct {
	net.Conn

	rd records

	wmu    sync.Mutex
	prefix []byte // sent before the first write's data; nil after
	wbuf   []byte
}

// Read returns the data of the server's records; an alert ends the
// stream.
func (c *v2Conn) Read(p []byte) (int, error) { return c.rd.read(c.Conn, p, openV2) }

func openV2(rec []byte) ([]byte, error) {
	switch rec[0] {
	case typeApplicationData:
		return rec[recordHeader:], nil
	case typeAlert:
		return nil, io.EOF
	}
	return nil, fmt.Errorf("%w of type %d", errRecord, rec[0])
}

// Write sends p as records of at most 2^14 bytes of data each.
func (c *v2Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for len(p) > 0 {
		room := 1 << 14
		c.wbuf = append(c.wbuf[:0], typeApplicationData, 3, 3, 0, 0)
		if c.prefix != nil {
			c.wbuf = append(c.wbuf, c.prefix...)
			room -= len(c.prefix)
		}
		chunk := p[:min(len(p), room)]
		c.wbuf = append(c.wbuf, chunk...)
		putLength(c.wbuf, len(c.wbuf)-recordHeader)
		if _, err := c.Conn.Write(c.wbuf); err != nil {
			return written, err
		}
		c.prefix = nil
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

// CloseWrite ends the sending half of the TCP connection.
func (c *v2Conn) CloseWrite() error { return closeWrite(c.Conn) }
