//go:build linux || darwin

package peercred

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRead(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer server.Close()

	wantPID := os.Getpid()
	if runtime.GOOS == "darwin" {
		wantPID = -1
	}
	for _, c := range []net.Conn{client, server} {
		cred, err := Read(c)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if cred.UID != os.Geteuid() || cred.PID != wantPID || len(cred.Groups) == 0 {
			t.Errorf("Read = %+v, want uid %d, pid %d and a group", cred, os.Geteuid(), wantPID)
		}
	}
}

func TestReadNotUnix(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := Read(a); err == nil {
		t.Error("Read of a pipe: no error")
	}
}
