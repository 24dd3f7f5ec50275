//go:build linux || darwin

package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skiffvpn/skiff/internal/peercred"
)

// listen opens the Unix socket at path: created under a temporary name,
// given owner root, the operators' group and mode 0660, and only then
// renamed into place, so that there is no moment at which others could
// connect. The directory is made root-owned and 0755 (it also holds the
// TUN state file, 0600). A socket left by a dead service is replaced; one
// that answers is a running service, and an error.
func listen(path, group string) (net.Listener, *authorizer, error) {
	gid := -1
	if g, err := user.LookupGroup(group); err == nil {
		gid, _ = strconv.Atoi(g.Gid)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, nil, err
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, nil, errors.New("another skiff service is running")
		}
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d", filepath.Base(path), os.Getpid()))
	os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, *authorizer, error) {
		ln.Close()
		os.Remove(tmp)
		return nil, nil, err
	}
	owner := 0
	if gid >= 0 {
		owner = gid
	}
	if err := os.Chown(tmp, 0, owner); err != nil {
		return fail(err)
	}
	if err := os.Chmod(tmp, 0o660); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return &unixListener{Listener: ln, path: path}, &authorizer{gid: gid, check: peerOf}, nil
}

// unixListener removes its socket file when closed.
type unixListener struct {
	net.Listener
	path string
}

func (l *unixListener) Close() error {
	err := l.Listener.Close()
	os.Remove(l.path)
	return err
}

// peerOf reads the peer's credentials (SO_PEERCRED, LOCAL_PEERCRED:
// taken by the kernel when the peer connected), with the peer process's
// supplementary groups from /proc on Linux.
func peerOf(c net.Conn) (*Peer, error) {
	cred, err := peercred.Read(c)
	if err != nil {
		return nil, err
	}
	p := &Peer{UID: cred.UID, PID: cred.PID, Groups: cred.Groups}
	if gs, err := procGroups(cred.PID); err == nil {
		p.Groups = append(p.Groups, gs...)
	}
	return p, nil
}
