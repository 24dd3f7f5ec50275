package service

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"

	"github.com/skiffvpn/skiff/core/api"
)

// Dial connects to the service's named pipe.
func Dial(ctx context.Context, socket string) (net.Conn, error) {
	c, err := winio.DialPipeContext(ctx, socket)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return nil, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf(
			"not allowed to use the Skiff service at %s: only Administrators and members of group %q may", socket, Group)}
	case errors.Is(err, windows.ERROR_FILE_NOT_FOUND):
		return nil, &api.Error{Code: api.CodeUnavailable, Message: "the Skiff service is not running: " + InstallHint()}
	}
	return nil, err
}
