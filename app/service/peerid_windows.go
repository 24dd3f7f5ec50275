package service

import (
	"fmt"
	"net"

	"golang.org/x/sys/windows"
)

// peerID names the caller for the API's per-peer bounds: the user SID of
// the process at the other end of the pipe (every pipe client is admitted
// as uid 0, so the uid cannot tell members apart). "" when it cannot be
// read: such callers share one count.
func peerID(c net.Conn, _ *Peer) string {
	sid, err := pipeClientSID(c)
	if err != nil {
		return ""
	}
	return sid
}

// pipeClientSID reads the user SID of c's client process.
func pipeClientSID(c net.Conn) (string, error) {
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return "", fmt.Errorf("not a named pipe: %T", c)
	}
	var pid uint32
	if err := windows.GetNamedPipeClientProcessId(windows.Handle(f.Fd()), &pid); err != nil {
		return "", fmt.Errorf("GetNamedPipeClientProcessId: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "", fmt.Errorf("OpenProcess %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return "", fmt.Errorf("OpenProcessToken %d: %w", pid, err)
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("GetTokenUser %d: %w", pid, err)
	}
	return u.User.Sid.String(), nil
}
