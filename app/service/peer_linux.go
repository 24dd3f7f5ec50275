package service

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peerOf reads the peer's credentials with SO_PEERCRED (taken by the kernel
// when the peer connected) and the peer process's groups from /proc.
func peerOf(c net.Conn) (*Peer, error) {
	var cred *unix.Ucred
	if err := peerSockopt(c, "SO_PEERCRED", func(fd int) (err error) {
		cred, err = unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		return err
	}); err != nil {
		return nil, err
	}
	p := &Peer{UID: int(cred.Uid), PID: int(cred.Pid), Groups: []int{int(cred.Gid)}}
	gs, err := procGroups(int(cred.Pid))
	if err == nil {
		p.Groups = append(p.Groups, gs...)
	}
	return p, nil
}

// procGroups reads the supplementary groups of process pid.
func procGroups(pid int) ([]int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Groups:")
		if !ok {
			continue
		}
		var out []int
		for _, s := range strings.Fields(rest) {
			if g, err := strconv.Atoi(s); err == nil {
				out = append(out, g)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("/proc/%d/status: no Groups line", pid)
}
