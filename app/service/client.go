package service

import (
	"context"
	"net"

	"github.com/skiffvpn/skiff/core/api"
)

// NewClient returns an API client of the service at socket ("":
// DefaultSocket).
func NewClient(socket string) *api.Client {
	if socket == "" {
		socket = DefaultSocket
	}
	return api.NewClient(func(ctx context.Context) (net.Conn, error) { return Dial(ctx, socket) })
}
