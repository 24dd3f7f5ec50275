package service

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads the peer's credentials with LOCAL_PEERCRED: its effective
// uid and groups when it connected.
func peerOf(c net.Conn) (*Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("not a unix socket: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		cred *unix.Xucred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("LOCAL_PEERCRED: %w", cerr)
	}
	p := &Peer{UID: int(cred.Uid), PID: -1}
	for i := 0; i < int(cred.Ngroups) && i < len(cred.Groups); i++ {
		p.Groups = append(p.Groups, int(cred.Groups[i]))
	}
	return p, nil
}
