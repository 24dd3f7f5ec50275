// Package vmess is the VMess client with AEAD headers (alterId 0), as
// Xray and sing-box speak it: one stream to the server per TCP flow and per
// UDP destination, over plain TCP, TLS, WebSocket over TLS, or HTTP/2 over
// TLS (the V2Ray http transport). The request
// header is sealed with keys derived from the user id (the "VMess AEAD
// KDF"), the body goes in chunks sealed with AES-128-GCM or
// ChaCha20-Poly1305 (or none), chunk sizes masked with SHAKE128 and, when
// the node asks for it, global padding.
//
// The request header goes with the flow's first bytes. A server that does
// not know the user closes the stream without a response, which shows as
// the first Read's error.
//
// Refused by New, each with its reason: legacy VMess (alterId > 0, MD5
// authentication), authenticated length, packet encodings (xudp,
// packetaddr), and the transports the stack does not have.
package vmess

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/stack"
	"github.com/skiffvpn/skiff/core/outbound/internal/udpstreams"
)

// Client is a VMess outbound through one server. It keeps no connection
// across flows; Close closes the flows it handed out.
type Client struct {
	addr  string
	stack *stack.Stack
	ck    [16]byte // command key
	sec   byte     // body cipher of TCP streams
	opt   byte     // request options of TCP streams
	raw   bool     // security zero: TCP streams without chunks
	now   func() time.Time

	flows outbound.Flows
}

// hasAESGCM reports whether AES-GCM runs in hardware here, which is when
// "auto" picks it (as Xray does), else ChaCha20-Poly1305.
func hasAESGCM() bool {
	switch runtime.GOARCH {
	case "amd64":
		return cpu.X86.HasAES && cpu.X86.HasPCLMULQDQ
	case "arm64":
		return cpu.ARM64.HasAES && cpu.ARM64.HasPMULL
	case "s390x":
		return cpu.S390X.HasAES && cpu.S390X.HasAESGCM
	}
	return false
}

// New returns a client for n, which must be a VMess node. d opens the
// sockets to the server; nil means a zero outbound.SystemDialer.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	addr, err := outbound.NodeAddress(n, n != nil && n.VMess != nil, "vmess", "VMess")
	if err != nil {
		return nil, err
	}
	o := n.VMess
	id, err := node.ParseUUID(o.UUID)
	if err != nil {
		return nil, fmt.Errorf("vmess: %s: %w", addr, err)
	}
	if o.AlterID > 0 {
		return nil, node.Unsupportedf(node.FeatureOption, fmt.Sprintf("alterId %d", o.AlterID), "vmess: %s: alterId %d is legacy VMess (MD5 authentication), which is not supported; only AEAD headers (alterId 0)", addr, o.AlterID)
	}
	if o.AlterID < 0 {
		return nil, fmt.Errorf("vmess: %s: alterId %d: negative", addr, o.AlterID)
	}
	if o.AuthenticatedLength {
		return nil, node.Unsupportedf(node.FeatureOption, "authenticated length", "vmess: %s: authenticated length is not supported yet", addr)
	}
	switch pe := strings.ToLower(o.PacketEncoding); pe {
	case "", "none":
	default:
		return nil, node.Unsupportedf(node.FeatureOption, "packet encoding "+pe, "vmess: %s: packet encoding %q is not supported yet", addr, pe)
	}
	c := &Client{addr: addr, ck: cmdKey(id), opt: optChunkStream | optChunkMasking, now: time.Now}
	switch sec := strings.ToLower(o.Security); sec {
	case "", "auto":
		c.sec = secChacha20
		if hasAESGCM() {
			c.sec = secAES128GCM
		}
	case "aes-128-gcm":
		c.sec = secAES128GCM
	case "chacha20-poly1305", "chacha20-ietf-poly1305":
		c.sec = secChacha20
	case "none":
		c.sec = secNone
	case "zero":
		c.sec, c.opt, c.raw = secNone, 0, true
	default:
		return nil, node.Unsupportedf(node.FeatureCipher, sec, "vmess: %s: security %q is not supported (auto, aes-128-gcm, chacha20-poly1305, none, zero)", addr, sec)
	}
	if o.GlobalPadding && c.sec != secNone {
		c.opt |= optGlobalPadding
	}
	if c.stack, err = stack.New("vmess", n, d); err != nil {
		return nil, err
	}
	return c, nil
}

// newRequest returns fresh keys and options for a stream of cmd.
func (c *Client) newRequest(cmd byte) request {
	r := request{cmd: cmd, security: c.sec, opt: c.opt}
	var b [34]byte
	rand.Read(b[:])
	copy(r.iv[:], b[:16])
	copy(r.key[:], b[16:32])
	r.v, r.padLen = b[32], int(b[33]%16)
	if cmd == cmdUDP && c.raw {
		// Datagrams need chunks to keep their boundaries.
		r.opt = optChunkStream | optChunkMasking
	}
	return r
}

// DialContext opens a stream to dst through the server. It returns once
// the TCP connection, the TLS handshake and (without early data) the
// WebSocket upgrade are done; the request goes with the first Write.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("vmess: %s: network %q, want tcp", c.addr, network)
	}
	return c.dialStream(ctx, cmdTCP, dst)
}

// dialStream opens one VMess stream for cmd toward dst and tracks it.
func (c *Client) dialStream(ctx context.Context, cmd byte, dst flow.Addr) (*conn, error) {
	rq := c.newRequest(cmd)
	plain, err := appendHeader(make([]byte, 0, 128), &rq, dst)
	if err != nil {
		return nil, fmt.Errorf("%w (server %s)", err, c.addr)
	}
	tr, err := c.stack.Dial(ctx)
	if err != nil {
		return nil, err
	}
	req := sealHeader(make([]byte, 0, len(plain)+16+18+8+16), &c.ck, c.now().Unix(), plain)
	vc := newConn(tr, c, &rq, req, c.raw && cmd == cmdTCP)
	if err := c.flows.Keep(vc, "vmess", c.addr); err != nil {
		return nil, err
	}
	return vc, nil
}

// ListenPacket opens a UDP session whose first destination is dst: one
// stream per destination, each datagram one chunk. The stream to dst is
// dialed before ListenPacket returns.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	return udpstreams.Listen(ctx, c.packetConfig(), dst, &c.flows)
}

// Close closes every stream and packet session the client handed out.
func (c *Client) Close() error {
	c.flows.Close()
	c.stack.Close()
	return nil
}
