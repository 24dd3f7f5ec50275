//go:build linux || darwin

package service

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestListenSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown to root)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "skiff.sock")
	ln, auth, err := listen(path, "group-that-does-not-exist-xyz")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o777 != 0o660 || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("socket mode %o owner %d:%d, want 0660 root:root without the group", st.Mode&0o777, st.Uid, st.Gid)
	}
	// A second service on the same socket is refused while the first runs.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p, err := auth.check(c)
			if err != nil || p.UID != 0 || p.PID != os.Getpid() {
				t.Errorf("peer %+v, %v; want this process as root", p, err)
			} else if id := peerID(c, p); id != "uid 0" {
				t.Errorf("peer ID %q, want uid 0", id)
			}
			c.Close()
		}
	}()
	if _, _, err := listen(path, "x"); err == nil || !strings.Contains(err.Error(), "another skiff service") {
		t.Errorf("second listen: %v", err)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	ln.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after close: %v", err)
	}
	// A stale socket of a dead service is replaced.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	ln, _, err = listen(path, "x")
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	ln.Close()
}
