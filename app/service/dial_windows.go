package service

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"

	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/internal/rootdir"
)

// Dial connects to the service's named pipe, asking for memberPipeAccess
// only (members have no more), and checks that the server is the service
// before anything is sent: see checkPipeServer.
func Dial(ctx context.Context, socket string) (net.Conn, error) {
	c, err := winio.DialPipeAccess(ctx, socket, memberPipeAccess)
	switch {
	case err == nil:
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return nil, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf(
			"not allowed to use the Skiff service at %s: only Administrators and members of group %q may", socket, Group)}
	case errors.Is(err, windows.ERROR_FILE_NOT_FOUND):
		return nil, &api.Error{Code: api.CodeUnavailable, Message: "the Skiff service is not running: " + InstallHint()}
	default:
		return nil, err
	}
	if err := checkPipeServer(c); err != nil {
		c.Close()
		return nil, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("%s is not the Skiff service's: %v", socket, err)}
	}
	return c, nil
}

// checkPipeServer reports whether the pipe c is connected to is owned by
// SYSTEM or the Administrators, as the service's is (the owner of a pipe
// is its creator's token owner, and a user who is not an elevated
// Administrator cannot name either), or by the caller itself. Another
// user who created \\.\pipe\skiff while the service was down owns it,
// and is refused before anything is sent. (The server's process token
// would say the same, but a member may not open a SYSTEM process's.)
func checkPipeServer(c net.Conn) error {
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return fmt.Errorf("no handle in %T", c)
	}
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("read the pipe's owner: %w", err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("read the pipe's owner: %w", err)
	}
	if !rootdir.AdminSID(owner) && !rootdir.SelfSID(owner) {
		return fmt.Errorf("it is owned by %s, not SYSTEM or the Administrators", owner)
	}
	return nil
}
