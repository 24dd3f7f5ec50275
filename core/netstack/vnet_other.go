//go:build !linux

package netstack

import (
	"errors"

	"golang.zx2c4.com/wireguard/tun"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// vnetWriter exists on Linux only: elsewhere every packet goes through the
// tun.Device's Write.
type vnetWriter struct{}

func newVnetWriter(tun.Device) *vnetWriter { return nil }

func (*vnetWriter) writePacket(*stack.PacketBuffer) error { return nil }

type vnetReader struct{}

func (*vnetWriter) newReader() (*vnetReader, error) { return nil, errors.ErrUnsupported }

func (*vnetReader) readPacket([][]byte) (int, uint8, error) { return 0, 0, errors.ErrUnsupported }
