package service

import (
	"net"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// listen opens the named pipe at path. Its DACL (pipeSDDL) admits SYSTEM,
// the Administrators and, when a local group of that name exists, the
// operators' group, without the right to create instances of the pipe;
// Windows refuses everyone else before the service sees them, so the
// per-connection check only confirms the pipe's own.
//
// winio creates the first instance with the FILE_CREATE disposition,
// which is what CreateNamedPipe's FILE_FLAG_FIRST_PIPE_INSTANCE becomes:
// when someone else already serves the name (a squatter started while
// the service was down), listen fails instead of adding an instance
// beside theirs.
func listen(path, group string) (net.Listener, *authorizer, error) {
	member := ""
	if sid, _, _, err := windows.LookupSID("", group); err == nil {
		member = sid.String()
	}
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{
		SecurityDescriptor: pipeSDDL(member),
		InputBufferSize:    64 << 10,
		OutputBufferSize:   64 << 10,
	})
	if err != nil {
		return nil, nil, err
	}
	return ln, &authorizer{gid: -1, check: pipePeer}, nil
}

// pipePeer admits every client the pipe's DACL let in: the pipe has no
// uid to compare, and Windows has checked the caller's token already.
func pipePeer(net.Conn) (*Peer, error) { return &Peer{UID: 0}, nil }
