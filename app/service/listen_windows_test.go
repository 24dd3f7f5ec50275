package service

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/skiffvpn/skiff/internal/nettest"
	"github.com/skiffvpn/skiff/internal/rootdir"
)

// TestPipe: a second server of the same name is refused (first
// instance), and a client checks the pipe's owner before it talks. Wine
// 8.0 does neither part of Windows' side: it creates a second first
// instance, and gives a pipe the owner S-1-5-21-0-0-0-513 (its "None"
// group), which the client refuses as it must refuse a squatter's.
func TestPipe(t *testing.T) {
	path := `\\.\pipe\skiff-s2-test`
	ln, _, err := listen(path, "group-that-does-not-exist")
	if err != nil {
		t.Fatal(err)
	}
	nettest.Serve(t, ln, func(c net.Conn) { c.Write([]byte("ok")) })
	wine := windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
	if ln2, _, err := listen(path, "x"); err == nil {
		ln2.Close()
		if !wine {
			t.Error("a second server of the same pipe was created")
		} else {
			t.Log("Wine created a second first instance of the pipe")
		}
	} else {
		t.Logf("second listen: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, path)
	if wine {
		if err == nil {
			c.Close()
			t.Fatal("dial accepted a pipe that SYSTEM, the Administrators and this user do not own")
		}
		t.Logf("under Wine, refused: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	f := c.(interface{ Fd() uintptr })
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pipe: %s", sd)
	b := make([]byte, 2)
	if _, err := c.Read(b); err != nil || string(b) != "ok" {
		t.Errorf("read %q, %v", b, err)
	}
}

// TestPipeSDDLParsed: Windows makes of pipeSDDL a protected DACL whose
// member ACE lacks FILE_CREATE_PIPE_INSTANCE.
func TestPipeSDDLParsed(t *testing.T) {
	const member = "S-1-5-21-1-2-3-1001"
	sd, err := windows.SecurityDescriptorFromString(pipeSDDL(member))
	if err != nil {
		t.Fatal(err)
	}
	aces, protected, err := rootdir.ACEs(sd)
	if err != nil {
		t.Fatal(err)
	}
	if !protected || len(aces) != 3 {
		t.Fatalf("protected %v, ACEs %+v", protected, aces)
	}
	for _, a := range aces {
		switch a.SID {
		case "S-1-5-18", "S-1-5-32-544":
			if a.Mask != 0x1f01ff {
				t.Errorf("%s: %#x", a.SID, a.Mask)
			}
		case member:
			if a.Mask != memberPipeAccess || a.Mask&windows.FILE_APPEND_DATA != 0 {
				t.Errorf("member: %#x, want %#x without FILE_CREATE_PIPE_INSTANCE", a.Mask, memberPipeAccess)
			}
		default:
			t.Errorf("ACE for %s", a.SID)
		}
	}
	// GRGW, granted before, holds FILE_CREATE_PIPE_INSTANCE once mapped.
	old, _ := windows.SecurityDescriptorFromString("D:P(A;;GRGW;;;" + member + ")")
	if aces, _, _ := rootdir.ACEs(old); len(aces) == 1 {
		t.Logf("the old member ACE: %#x (generic, mapped to FILE_GENERIC_WRITE at the access check, which includes FILE_APPEND_DATA %#x)", aces[0].Mask, windows.FILE_APPEND_DATA)
	}
}
