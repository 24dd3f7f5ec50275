package service

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads the peer's credentials with LOCAL_PEERCRED: its effective
// uid and groups when it connected.
func peerOf(c net.Conn) (*Peer, error) {
	var cred *unix.Xucred
	if err := peerSockopt(c, "LOCAL_PEERCRED", func(fd int) (err error) {
		cred, err = unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		return err
	}); err != nil {
		return nil, err
	}
	p := &Peer{UID: int(cred.Uid), PID: -1}
	for i := 0; i < int(cred.Ngroups) && i < len(cred.Groups); i++ {
		p.Groups = append(p.Groups, int(cred.Groups[i]))
	}
	return p, nil
}
