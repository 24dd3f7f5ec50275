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

func TestAllowed(t *testing.T) {
	a := &authorizer{gid: 1234}
	for _, tc := range []struct {
		p  Peer
		ok bool
	}{
		{Peer{UID: 0}, true},
		{Peer{UID: 1000, Groups: []int{100, 1234}}, true},
		{Peer{UID: 1000, Groups: []int{100}}, false},
		{Peer{UID: 1000}, false},
	} {
		err := a.allowed(&tc.p)
		if (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.p, err)
		}
		if err != nil && !strings.Contains(err.Error(), "usermod -aG") {
			t.Errorf("refusal does not say what to do: %v", err)
		}
	}
	// Without the group, only root.
	if err := (&authorizer{gid: -1}).allowed(&Peer{UID: 1000, Groups: []int{0}}); err == nil {
		t.Error("a non-root peer was allowed without an operators' group")
	}
}

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

func TestUnit(t *testing.T) {
	u := Unit(PackagedBinary)
	for _, want := range []string{"ExecStart=/usr/bin/skiff service\n", "ExecStopPost=/usr/bin/skiff cleanup\n", "Restart=on-failure", "WantedBy=multi-user.target"} {
		if !strings.Contains(u, want) {
			t.Errorf("unit lacks %q:\n%s", want, u)
		}
	}
}
