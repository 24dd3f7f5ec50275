package instance

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// errTaken: another process serves the pipe.
var errTaken = errors.New("taken")

// pipeName is the instance's pipe: per user (the SID is in the name), and
// its DACL admits that user only.
func pipeName(cfg Config) (string, string, error) {
	sid, err := userSID()
	if err != nil {
		return "", "", err
	}
	return `\\.\pipe\skiff-` + cfg.Name + "-" + sid, sid, nil
}

// listen creates the pipe's first instance. winio creates it with
// FILE_CREATE (FILE_FLAG_FIRST_PIPE_INSTANCE): when another process
// serves the name it fails (name collision, or access denied by the
// other's DACL), and this launch hands over.
func listen(cfg Config) (net.Listener, func(), error) {
	name, sid, err := pipeName(cfg)
	if err != nil {
		return nil, nil, err
	}
	ln, err := winio.ListenPipe(name, &winio.PipeConfig{
		SecurityDescriptor: "D:P(A;;GA;;;" + sid + ")",
		InputBufferSize:    MaxMessage,
		OutputBufferSize:   4 << 10,
	})
	if errors.Is(err, windows.ERROR_ALREADY_EXISTS) || errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_PIPE_BUSY) {
		return nil, nil, errTaken
	}
	if err != nil {
		return nil, nil, err
	}
	return ln, nil, nil
}

func dial(ctx context.Context, cfg Config) (net.Conn, error) {
	name, _, err := pipeName(cfg)
	if err != nil {
		return nil, err
	}
	return winio.DialPipeContext(ctx, name)
}

// checkPeer admits a client of this user only.
func checkPeer(c net.Conn) error {
	return pipeSameUser(c, windows.GetNamedPipeClientProcessId)
}

// checkServer hands arguments only to a primary of this user, and lets it
// take the foreground (Windows gives it only to the process the user
// started, which is this one).
func checkServer(c net.Conn) error {
	pid, err := pipeSameUserPID(c, windows.GetNamedPipeServerProcessId)
	if err != nil {
		return err
	}
	allowSetForegroundWindow(pid)
	return nil
}

func pipeSameUser(c net.Conn, get func(windows.Handle, *uint32) error) error {
	_, err := pipeSameUserPID(c, get)
	return err
}

// pipeSameUserPID checks that the process at the other end of the pipe
// runs as this user, and returns its process id.
func pipeSameUserPID(c net.Conn, get func(windows.Handle, *uint32) error) (uint32, error) {
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return 0, fmt.Errorf("not a named pipe: %T", c)
	}
	var pid uint32
	if err := get(windows.Handle(f.Fd()), &pid); err != nil {
		return 0, fmt.Errorf("the pipe's peer: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return 0, fmt.Errorf("OpenProcess %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return 0, fmt.Errorf("OpenProcessToken %d: %w", pid, err)
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return 0, err
	}
	me, err := userSID()
	if err != nil {
		return 0, err
	}
	if got := u.User.Sid.String(); got != me {
		return 0, fmt.Errorf("the peer runs as %s, not as this user (%s)", got, me)
	}
	return pid, nil
}

// userSID is this process's user SID.
func userSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("this process's user: %w", err)
	}
	return u.User.Sid.String(), nil
}

var procAllowSetForegroundWindow = windows.NewLazySystemDLL("user32.dll").NewProc("AllowSetForegroundWindow")

func allowSetForegroundWindow(pid uint32) { procAllowSetForegroundWindow.Call(uintptr(pid)) }
