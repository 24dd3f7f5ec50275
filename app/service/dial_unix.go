//go:build !windows

package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"

	"github.com/skiffvpn/skiff/core/api"
)

// Dial connects to the service's socket. A missing socket and a refused
// connection mean no service runs (api.ErrUnavailable); a socket the
// caller may not open means the caller is not an operator
// (api.ErrForbidden), and the error says how to become one.
func Dial(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, fs.ErrPermission):
		return nil, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf(
			"not allowed to use the Skiff service at %s: only root and members of group %q may (sudo usermod -aG %s $USER, then log in again)", socket, Group, Group)}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return nil, &api.Error{Code: api.CodeUnavailable, Message: fmt.Sprintf(
			"the Skiff service is not running (no %s): %s", socket, InstallHint())}
	}
	return nil, err
}
