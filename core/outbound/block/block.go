// Package block is the outbound that refuses every flow: the target of
// "block" routing rules (ads, trackers, anything the user wants cut off).
package block

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
)

// ErrBlocked is what every dial through Block fails with (wrapped with the
// destination).
var ErrBlocked = errors.New("blocked by rule")

// Block is an outbound.Outbound that refuses everything.
type Block struct{}

var _ outbound.Outbound = Block{}

// New returns a Block.
func New() Block { return Block{} }

// DialContext refuses the stream.
func (Block) DialContext(_ context.Context, _ string, dst flow.Addr) (net.Conn, error) {
	return nil, fmt.Errorf("block: stream to %s: %w", dst, ErrBlocked)
}

// ListenPacket refuses the session.
func (Block) ListenPacket(_ context.Context, dst flow.Addr) (net.PacketConn, error) {
	return nil, fmt.Errorf("block: udp to %s: %w", dst, ErrBlocked)
}

// Close does nothing.
func (Block) Close() error { return nil }
